// Package exec applies a resolved plan to a real host and measures it.
//
// run.go is the orchestrator: Session.Run and execute show the whole flow
// of a run, and call down into one file per phase, in the order a run
// takes them:
//
//	session.go   open: the host lock, orphans swept (orphans.go), plans'
//	             sources checked, every image made sure of, validators run
//	infra.go     the infrastructure up, verified like arms, reached, healthy
//	images.go    the arm's images, its version read inside them (C16)
//	dataset.go   host checks, prefill, N and the checksum (C13), the table
//	start.go     the arm's containers from the resolved image IDs, caps
//	             read back (C6), each watched for its exit
//	window.go    sample (sample/), hold the caps (capwatch.go), read the
//	             host (hostcpu.go), drain until N or a stall, stop, quiesce
//	gates.go     loss, checksum, duplicates, ceilings (C12), the metrics
//
// and below them the helpers every phase uses: runner.go (the Runner, its
// clock and log), errors.go (Refusal before the window, Failure after),
// jvm.go (C9's hand-over and read-back), ceilings.go, cgroups.go,
// labels.go. Nothing below calls back up into run.go.
//
// The executor never re-evaluates policy: everything it applies comes from
// the plan. Its boundaries are small interfaces (engine.Engine for the
// container engine: Docker's in engine/docker, a Kubernetes cluster's in
// engine/kube; Cgroups for the cgroup tree: the host's, or a node's through
// spatec's probe; sample.Clock for time), so tests use the real engine and
// kernel where they run and fixtures where they cannot.
package exec
