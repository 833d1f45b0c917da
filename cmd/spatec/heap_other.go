//go:build !linux

package main

// adviseHugePages does nothing where the kernel has no transparent huge
// pages to ask for.
func adviseHugePages() {}
