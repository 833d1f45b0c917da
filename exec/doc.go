// Package exec applies a resolved plan to a real host and measures it.
//
// The whole flow of a run is in run.go, in the order it happens:
//
//	host checks ► infra up ► verify infra caps ► prefill ► table ► images
//	► version (C16) ► arm up ► verify arm caps (C6) ► window: sample + drain
//	► stop arm ► gates (C13, C12) ► teardown ► append record (C14)
//
// The executor never re-evaluates policy: everything it applies comes from
// the plan. Its boundaries are small interfaces (Engine for the container
// engine: Docker's, or a Kubernetes cluster's in package kube; Cgroups for
// the cgroup tree: the host's, or a node's through spatec's probe;
// sample.Clock for time), so tests use the real engine and kernel where
// they run and fixtures where they cannot.
package exec
