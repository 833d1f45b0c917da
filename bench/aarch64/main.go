// Command aarch64 builds, on this host, every image spatec builds for the
// plans of an environment of another architecture (by default the public
// harness's Graviton host, c8g-8xl-ec2-docker, arm64), as exec would build
// them there, and prints for each the architecture the engine reports for
// it, how long it took, and the version its entrant reads inside it, run
// under the kernel's emulator: what the host would run, made and looked at
// before it is rented. An image that cannot be made here says why.
//
// It needs what building for another architecture needs: mmdebstrap with
// the other architecture's binaries run by binfmt_misc (qemu-user-static),
// and, for a crate, Rust's target and Debian's cross gcc;
// bench/aarch64.sh installs them.
//
// Usage (bench/aarch64.sh runs it):
//
//	go run ./bench/aarch64 [-env c8g-8xl-ec2-docker]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"syscall"
	"text/tabwriter"
	"time"

	"spatec.dev/spatec/compiler"
	"spatec.dev/spatec/exec"
	"spatec.dev/spatec/exec/engine"
	"spatec.dev/spatec/exec/engine/docker"
	"spatec.dev/spatec/exec/progress"
	"spatec.dev/spatec/schema"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "aarch64: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	envName := flag.String("env", "c8g-8xl-ec2-docker", "environment whose images to build")
	flag.Parse()

	root, err := repoRoot()
	if err != nil {
		return err
	}
	tree, err := compiler.Load(compiler.Options{Dir: root})
	if err != nil {
		return err
	}
	var plans []*schema.Plan
	for _, id := range tree.Plans() {
		if id.Env != *envName {
			continue
		}
		p, problems := tree.Resolve(id.Env, id.Entrant, id.Variant)
		if len(problems) > 0 {
			return fmt.Errorf("%s:%s on %s: %v", id.Entrant, id.Variant, id.Env, problems)
		}
		plans = append(plans, p)
	}
	if len(plans) == 0 {
		return fmt.Errorf("no plan on %s", *envName)
	}
	env := plans[0].Env

	e, err := docker.New(ctx)
	if err != nil {
		return err
	}
	defer e.Close()
	host, err := e.Info(ctx)
	if err != nil {
		return err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return err
	}
	// The cache spatec exec keeps: root file systems, downloads and
	// compiled programs, each named with the architecture it is for.
	r := &exec.Runner{Engine: e, Progress: progress.New(os.Stderr), Log: os.Stderr,
		SourceDir: root, CacheDir: filepath.Join(cache, "spatec")}
	fmt.Printf("building the images of %d plans of %s (%s) on a %s engine\n", len(plans), env.Name, env.Arch.Name(), host.Architecture)
	start := time.Now()
	built := r.BuildImages(ctx, env, plans...)

	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "IMAGE\tARCHITECTURE (ENGINE)\tTOOK\tVERSION INSIDE\tID")
	failed := 0
	for _, b := range built {
		if b.Err != nil {
			failed++
			fmt.Fprintf(tw, "%s\tnot built\t%s\t-\t%v\n", b.Ref, b.Took.Round(time.Second), b.Err)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", b.Ref, b.Architecture, b.Took.Round(time.Second), versionInside(ctx, e, b, plans), b.ID)
	}
	tw.Flush()
	fmt.Printf("%d images in %s, %d not built\n", len(built), time.Since(start).Round(time.Second), failed)
	if failed > 0 {
		return errors.New("some images could not be built here; each says why above")
	}
	return nil
}

// versionInside reads, inside the image, the version of the entrant that
// runs it, as exec reads it before a run (C16), with no network; on
// another architecture than the host's the kernel's emulator runs it.
func versionInside(ctx context.Context, e engine.Engine, b exec.Built, plans []*schema.Plan) string {
	for _, p := range plans {
		v := p.Entrant.Version
		c, ok := p.Entrant.Containers[v.Container]
		if !ok || c.Image != b.Ref {
			continue
		}
		code, out, err := e.RunOnce(ctx, engine.ContainerSpec{
			Name:        fmt.Sprintf("spatec-aarch64-version-%d", time.Now().UnixNano()),
			Image:       b.Ref,
			ImageID:     b.ID,
			Entrypoint:  v.Command,
			Labels:      map[string]string{"dev.spatec.bench": "aarch64"},
			NetworkMode: "none",
		}, nil)
		if err != nil {
			return "could not run: " + err.Error()
		}
		m := regexp.MustCompile(v.Match).FindStringSubmatch(out)
		if code != 0 || len(m) < 2 {
			return fmt.Sprintf("none read (exit %d)", code)
		}
		return fmt.Sprintf("%s %s (pin %s)", p.Entrant.Name, m[1], v.Pin)
	}
	return "-"
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "cue.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no cue.mod above the working directory; run from the checkout")
		}
		dir = parent
	}
}
