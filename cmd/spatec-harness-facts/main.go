// Command spatec-harness-facts reads the public harness's settings from a
// checkout of it and writes them as facts (harness/facts.tsv):
//
//	spatec-harness-facts [-commit SHA] [-o harness/facts.tsv] /path/to/benchmark
//
// With -published FILE it summarises instead the results the harness
// published of its host (harness.PublishedEnv) into FILE
// (harness/published.tsv).
//
// The commit is read from the checkout's git when it has one; a checkout
// without git (an exported tree) must name it.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"spatec.dev/spatec/harness"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("spatec-harness-facts", flag.ContinueOnError)
	fl.SetOutput(stderr)
	commit := fl.String("commit", "", "the harness's commit, when the checkout has no git")
	out := fl.String("o", "", "write the facts here rather than to standard output")
	published := fl.String("published", "", "summarise the harness's published results of its host into this file, in place of the facts")
	if err := fl.Parse(args); err != nil || fl.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: spatec-harness-facts [-commit SHA] [-o FILE | -published FILE] /path/to/benchmark")
		return 2
	}
	dir := fl.Arg(0)
	if *commit == "" {
		var err error
		if *commit, err = gitCommit(ctx, dir); err != nil {
			fmt.Fprintf(stderr, "spatec-harness-facts: %v; name it with -commit\n", err)
			return 2
		}
	}
	var b bytes.Buffer
	var err error
	if *published != "" {
		*out = *published
		err = writePublished(&b, dir, *commit)
	} else {
		err = writeFacts(&b, dir, *commit)
	}
	if err != nil {
		fmt.Fprintln(stderr, "spatec-harness-facts:", err)
		return 1
	}
	if *out == "" {
		_, err = stdout.Write(b.Bytes())
	} else {
		err = os.WriteFile(*out, b.Bytes(), 0o644)
	}
	if err != nil {
		fmt.Fprintln(stderr, "spatec-harness-facts: writing:", err)
		return 1
	}
	return 0
}

func writeFacts(w io.Writer, dir, commit string) error {
	facts, err := harness.Extract(harness.DirFS(dir))
	if err != nil {
		return err
	}
	return harness.Facts{Commit: commit, List: facts}.Write(w)
}

func writePublished(w io.Writer, dir, commit string) error {
	figs, err := harness.ReadResults(harness.DirFS(dir), harness.PublishedEnv)
	if err != nil {
		return err
	}
	return harness.Published{Commit: commit, Env: harness.PublishedEnv, Figures: figs}.Write(w)
}

// gitCommit is the commit a checkout's HEAD is at.
func gitCommit(ctx context.Context, dir string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", "-C", dir, "rev-parse", "HEAD")
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	b, err := cmd.Output()
	if err != nil {
		return "", errors.New("reading the checkout's commit: " + strings.TrimSpace(errOut.String()))
	}
	return strings.TrimSpace(string(b)), nil
}
