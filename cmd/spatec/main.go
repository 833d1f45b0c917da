// Command spatec compiles entrant and environment files into reviewed run
// plans, and executes them under the fairness contract.
//
// Exit codes:
//
//	0  success
//	1  problems found (vet, plan, validate), or a run that failed
//	2  usage error
//	3  REFUSED: the contract is violated, the caps do not read back, an
//	   image is unpinned or missing, or another measurement holds the host
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Exit codes, documented in the package comment and the README.
const (
	exitOK       = 0
	exitProblems = 1
	exitUsage    = 2
	exitRefused  = 3
)

// refusal is an error that refuses a run: it prints with REFUSED: and exits 3.
type refusal struct{ err error }

func (r refusal) Error() string { return r.err.Error() }
func (r refusal) Unwrap() error { return r.err }

// refuse wraps err as a refusal.
func refuse(format string, args ...any) error { return refusal{fmt.Errorf(format, args...)} }

// usageError is a bad command line: it exits 2.
type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }

// problemsError says problems were printed already: it exits 1.
type problemsError struct{ n int }

func (p problemsError) Error() string { return fmt.Sprintf("%d problem(s)", p.n) }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run dispatches a command line and maps its outcome to an exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	cmds := map[string]func(context.Context, []string, io.Writer, io.Writer) error{
		"plan":      cmdPlan,
		"vet":       cmdVet,
		"version":   cmdVersion,
		"exec":      cmdExec,
		"sweep":     cmdSweep,
		"footprint": cmdFootprint,
		"ceiling":   cmdCeiling,
		"validate":  cmdValidate,
		"report":    cmdReport,
		"export":    cmdExport,
		"pin":       cmdPin,
		"corpus":    cmdCorpus,
	}
	cmd, ok := cmds[args[0]]
	if !ok {
		if args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
			usage(stdout)
			return exitOK
		}
		fmt.Fprintf(stderr, "spatec: unknown command %q\n\n", args[0])
		usage(stderr)
		return exitUsage
	}
	err := cmd(ctx, args[1:], stdout, stderr)
	var (
		ref  refusal
		use  usageError
		prob problemsError
	)
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ref):
		fmt.Fprintf(stderr, "REFUSED: %v\n", ref.err)
		return exitRefused
	case errors.As(err, &use):
		fmt.Fprintf(stderr, "spatec %s: %s\n", args[0], use.msg)
		return exitUsage
	case errors.As(err, &prob):
		return exitProblems
	default:
		fmt.Fprintf(stderr, "spatec %s: %v\n", args[0], err)
		return exitProblems
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: spatec <command> [flags] [args]

commands:
  plan --env E|all [entrant[:variant] ...]
                                         resolve entrants (all, in every variant, by default)
                                         against an environment (or every one) and print the plans
  vet                                    check every entrant against every environment it supports
  exec --env E entrant[:variant]         run an entrant under its plan (or: exec plan.json)
  sweep --env E entrant:study            run every point of a study, points × reps interleaved
  footprint --env E entrant:study        tighten the arm's data-plane cap until it degrades (a footprint study)
  ceiling --measure --env E              measure the broker and ClickHouse ceilings (C12)
  ceiling --import FILE --env E          import the reference harness's ceilings, held to E's plan
  pin --env E                            pin every image E pulls to its registry digest (envs/E/pins.cue)
  corpus --workload W --batches N        what a correct arm lands from the first N messages of W: rows, checksum, sizes
  validate [results/]                    check the results log
  report [results/...]                   aggregate records into a comparison (and history)
  export --to schema2 [results/...]      write records as the reference harness's schema 2
  version                                print the version and commit

exit codes: 0 ok, 1 problems or a failed run, 2 usage, 3 REFUSED
`)
}

// parseFlags parses flags wherever they stand among the arguments, so that
// `spatec exec --env local reference --reps 3` reads as written, and returns
// the positional arguments in order.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, usageError{err.Error()}
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if rest[0] == "--" {
			return append(positional, rest[1:]...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}
