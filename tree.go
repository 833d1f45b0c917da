// Package spatec carries the project's CUE tree (module file, schema,
// environments, entrants, workloads and the systems' option registries, with the files the workloads and
// environments embed) inside the binary, so that spatec plans from any
// directory. The compiler reads it through an fs.FS; a checkout on disk is
// read the same way, through os.DirFS.
package spatec

import "embed"

// Tree is the embedded CUE tree, rooted at the module root.
//
//go:embed cue.mod/module.cue schema/*.cue envs/*/*.cue entrants/*/*.cue workloads/*/*.cue options/*/*.cue workloads/*/*.avsc workloads/*/*.sql envs/*/*.sql
var Tree embed.FS
