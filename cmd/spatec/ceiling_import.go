package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"spatec.dev/spatec/exec"
	"spatec.dev/spatec/exec/progress"
	"spatec.dev/spatec/runs/record"
	"spatec.dev/spatec/schema"
	"spatec.dev/spatec/workloads"
)

// importCeilings imports the reference harness's ceilings file as the
// ceilings of f.env for one workload (only, else the one whose corpus the
// file was measured on), held to the environment's plan: the mean size of
// its messages over its whole dataset, as a run's gate will compare it,
// its caps, partitions, images and corpus. A file that is not the
// harness's is a usage error; one that does not describe the plan is
// refused.
func importCeilings(ctx context.Context, f execFlags, path, only string, stdout, stderr io.Writer) error {
	file, err := exec.ReadHarnessCeilings(path)
	if err != nil {
		return usageError{err.Error()}
	}
	env, err := loadEnvironment(f.tree, f.env)
	if err != nil {
		return err
	}
	wl, err := importedWorkload(env, file, only)
	if err != nil {
		return err
	}
	if err := record.CheckRoot(f.results); err != nil {
		return refusal{err}
	}
	p := progress.New(stderr)
	p.Start("message size", wl.Messages, "msgs")
	total, err := workloads.MessageBytes(ctx, wl, wl.Messages, func(d int64) { p.Set(d) })
	if err != nil {
		p.Fail(err)
		return fmt.Errorf("the mean size of %s's messages: %w", wl.Name, err)
	}
	p.End()
	ver, _ := buildInfo()
	c, err := file.Import(*env, wl, float64(total)/float64(wl.Messages), time.Now(), ver)
	if err != nil {
		var ref *exec.Refusal
		if errors.As(err, &ref) {
			return refusal{ref}
		}
		return err
	}
	out := exec.CeilingsPath(f.results, f.env, wl.Name)
	if err := c.Write(out); err != nil {
		return err
	}
	return writeCeilings(stdout, out, c)
}

// importedWorkload is the workload of env the file's ceilings are for:
// only, when given (a workload env hosts), else the one whose corpus the
// file was measured on.
func importedWorkload(env *schema.Environment, file *exec.HarnessCeilingsFile, only string) (schema.Workload, error) {
	names := slices.Sorted(maps.Keys(env.Workloads))
	if only != "" {
		wl, ok := env.Workloads[only]
		if !ok {
			return schema.Workload{}, usageError{fmt.Sprintf("%s hosts no workload %q; it hosts: %s", env.Name, only, strings.Join(names, ", "))}
		}
		return wl, nil
	}
	corpus, ok := file.DatasetVersion()
	if !ok {
		return schema.Workload{}, refuse("C12: %s was measured on a corpus spatec does not generate, so it is the ceiling of no workload of %s", file.Path, env.Name)
	}
	for _, n := range names {
		if env.Workloads[n].DatasetVersion == corpus {
			return env.Workloads[n], nil
		}
	}
	return schema.Workload{}, refuse("C12: %s was measured on the reference harness's corpus, spatec's %s, and no workload of %s is that corpus (its workloads: %s)",
		file.Path, corpus, env.Name, strings.Join(names, ", "))
}
