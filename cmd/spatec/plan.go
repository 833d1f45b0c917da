package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	gojson "github.com/goccy/go-json"

	"spatec.dev/spatec"
	"spatec.dev/spatec/compiler"
	"spatec.dev/spatec/exec/artefact"
	"spatec.dev/spatec/exec/compile"
	"spatec.dev/spatec/exec/debimage"
	"spatec.dev/spatec/exec/engine/kube"
	"spatec.dev/spatec/exec/layered"
	"spatec.dev/spatec/runs/footprint"
	"spatec.dev/spatec/schema"
)

// moduleLine identifies this project's CUE module on disk.
const moduleLine = `module: "spatec.dev/spatec@v0"`

// loadTree loads the CUE tree from dir when given, else from the checkout
// around the working directory, else from the copy inside the binary.
func loadTree(dir string) (*compiler.Tree, error) {
	prepareHeap()
	if dir == "" {
		dir = findCheckout()
	}
	if dir == "" {
		return compiler.Load(compiler.Options{FS: spatec.Tree, Display: "(embedded)/"})
	}
	// A --tree that names no tree is a mistake on the command line.
	if _, err := os.Stat(filepath.Join(dir, "cue.mod", "module.cue")); err != nil {
		return nil, usageError{fmt.Sprintf("--tree %s is not a spatec tree: it has no cue.mod/module.cue (%v); give the directory that holds cue.mod", dir, err)}
	}
	display := ""
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, dir); err == nil && rel != "." {
			display = rel + "/"
		}
	}
	return compiler.Load(compiler.Options{Dir: dir, Display: display})
}

// findCheckout walks up from the working directory to a spatec module root.
func findCheckout() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "cue.mod", "module.cue"))
		if err == nil && strings.Contains(string(b), moduleLine) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// allEnvs is the --env value that selects every environment.
const allEnvs = "all"

// parseSelections expands the command line into plans. Without entrants,
// every entrant that supports an environment is planned in every variant:
// variants change caps and knobs, and each is reviewed. A named entrant
// without a variant is planned in its default one.
func parseSelections(t *compiler.Tree, env string, args []string) []compiler.PlanID {
	var out []compiler.PlanID
	if len(args) == 0 {
		for _, id := range t.Plans() {
			if env == allEnvs || id.Env == env {
				out = append(out, id)
			}
		}
		return out
	}
	envs := []string{env}
	if env == allEnvs {
		envs = t.Environments()
	}
	for i, env := range envs {
		for _, a := range args {
			e, v, _ := strings.Cut(a, ":")
			known := slices.Contains(t.Entrants(), e)
			if len(envs) > 1 && (known && !t.Supports(e, env) || !known && i > 0) {
				continue // --env all: the environments it lists; an unknown one once
			}
			out = append(out, compiler.PlanID{Env: env, Entrant: e, Variant: v})
		}
	}
	return out
}

func cmdPlan(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	fs.SetOutput(stderr)
	env := fs.String("env", "", "environment to resolve against, or \"all\" (required)")
	out := fs.String("o", "table", "output: table, json, or k8s (a Kubernetes environment's manifests, for review)")
	tree := fs.String("tree", "", "CUE tree root (default: the checkout around the working directory, else the embedded tree)")
	args, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if *env == "" {
		return usageError{"--env is required, e.g. --env bench-96c"}
	}
	if *out != "table" && *out != "json" && *out != "k8s" {
		return usageError{fmt.Sprintf("-o %s: use table, json or k8s", *out)}
	}
	t, err := loadTree(*tree)
	if err != nil {
		return err
	}
	if err := checkNames(t, *env, args); err != nil {
		return err
	}
	plans, problems := resolveAll(t, parseSelections(t, *env, args))
	for _, p := range problems {
		fmt.Fprintln(stderr, p)
	}
	if len(plans) == 0 && len(problems) == 0 && *env != allEnvs {
		fmt.Fprintf(stderr, "%s: no entrant supports it yet, so there is no plan to print; the environment's own checks pass\n", *env)
	}
	if err := pinSources(cmp.Or(*tree, findCheckout()), plans); err != nil {
		return err
	}
	if *out == "k8s" {
		for i, p := range plans {
			m, err := kube.ForPlan(p)
			if err != nil {
				return usageError{fmt.Sprintf("-o k8s: %v", err)}
			}
			b, err := m.YAML()
			if err != nil {
				return err
			}
			if i > 0 {
				fmt.Fprintln(stdout, "---")
			}
			fmt.Fprintf(stdout, "# plan %s:%s on %s, %s\n", p.Entrant.Name, p.Variant, p.Env.Name, p.Digest())
			stdout.Write(b)
		}
	} else if *out == "json" {
		docs := make([]schema.Document, 0, len(plans))
		for _, p := range plans {
			docs = append(docs, schema.NewDocument(*p))
		}
		// goccy's encoder writes what encoding/json writes, about twice
		// as fast on the 71 plans' 2.4 MB: a sizeable part of what `plan`
		// adds to the evaluation `cue vet` also does.
		enc := gojson.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		var v any = docs
		if len(docs) == 1 {
			v = docs[0]
		}
		if err := enc.Encode(v); err != nil {
			return fmt.Errorf("writing the plan: %w", err)
		}
	} else {
		for i, p := range plans {
			if i > 0 {
				fmt.Fprintln(stdout)
			}
			writePlan(stdout, p)
		}
	}
	if len(problems) > 0 {
		return problemsError{len(problems)}
	}
	return nil
}

// pinSources writes into each plan what its images are built from in the
// checkout at src, so that a reviewed plan binds the program (C16). Without
// a checkout nothing is built from a tree, and nothing is pinned.
func pinSources(src string, plans []*schema.Plan) error {
	if src == "" {
		return nil
	}
	tree := compile.Tree{Dir: src}
	// Many plans build the same image: each is read once.
	read := map[string]string{}
	for _, p := range plans {
		for _, n := range p.ContainerNames() {
			c := p.Entrant.Containers[n]
			d, ok := read[c.Image]
			if !ok {
				var err error
				if d, err = tree.Source(c.Build); err != nil {
					return fmt.Errorf("pinning the sources of image %s: %w", c.Image, err)
				}
				read[c.Image] = d
			}
			if d == "" {
				continue
			}
			if p.Sources == nil {
				p.Sources = map[string]string{}
			}
			p.Sources[c.Image] = d
		}
	}
	return nil
}

// resolveAll resolves each wanted plan, collecting every problem.
func resolveAll(t *compiler.Tree, ids []compiler.PlanID) ([]*schema.Plan, []compiler.Problem) {
	var plans []*schema.Plan
	problems := append([]compiler.Problem(nil), t.Broken()...)
	for _, id := range ids {
		if !t.Supports(id.Entrant, id.Env) && slices.Contains(t.Entrants(), id.Entrant) {
			problems = append(problems, compiler.Problem{Rule: "usage",
				Message: fmt.Sprintf("entrant %s does not list %s in supports", id.Entrant, id.Env)})
			continue
		}
		p, ps := t.Resolve(id.Env, id.Entrant, id.Variant)
		problems = append(problems, ps...)
		if p != nil {
			plans = append(plans, p)
		}
	}
	return plans, compiler.Dedupe(problems)
}

func cmdVet(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("vet", flag.ContinueOnError)
	fs.SetOutput(stderr)
	tree := fs.String("tree", "", "CUE tree root (default: the checkout around the working directory, else the embedded tree)")
	args, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	t, err := loadTree(*tree)
	if err != nil {
		return err
	}
	problems := append([]compiler.Problem(nil), t.Broken()...)
	ids := t.Plans()
	for _, id := range ids {
		problems = append(problems, t.Check(id.Env, id.Entrant, id.Variant)...)
	}
	n := len(ids)
	problems = compiler.Dedupe(problems)
	for _, p := range problems {
		fmt.Fprintln(stderr, p)
	}
	if len(problems) > 0 {
		fmt.Fprintf(stderr, "%d problem(s) in %d plan(s)%s\n", len(problems), n, unmade(t.Unmade()))
		return problemsError{len(problems)}
	}
	fmt.Fprintf(stdout, "%d plans, %d environments, %d entrants: no problems\n", n, len(t.Environments()), len(t.Entrants()))
	return nil
}

// unmade says which plans the count leaves out, and why: "; 9 more
// could not be made (entrants/vector: it has no name)".
func unmade(us []compiler.Unmade) string {
	if len(us) == 0 {
		return ""
	}
	total, known := 0, true
	var why []string
	for _, u := range us {
		if u.Plans < 0 {
			known = false
			why = append(why, fmt.Sprintf("%s: %s", u.Dir, u.Why))
			continue
		}
		total += u.Plans
		why = append(why, fmt.Sprintf("%s: %s, %d plan(s)", u.Dir, u.Why, u.Plans))
	}
	count := fmt.Sprint(total)
	if !known {
		count = "at least " + count
	}
	return fmt.Sprintf("; %s more could not be made (%s)", count, strings.Join(why, "; "))
}

// source says what the plan pins an image's tree sources to, if anything.
func source(p *schema.Plan, ref string) string {
	if d := p.Sources[ref]; d != "" {
		return " (source " + d + ")"
	}
	return ""
}

// writePlan prints one plan as a table a maintainer can review.
func writePlan(w io.Writer, p *schema.Plan) {
	e := p.Env
	fmt.Fprintf(w, "plan %s:%s on %s (%s, %s)\n", p.Entrant.Name, p.Variant, e.Name, e.Class, e.Arch.Name())
	fmt.Fprintf(w, "digest %s\n", p.Digest())
	if p.Entrant.Blocked != "" {
		fmt.Fprintf(w, "BLOCKED: cannot run yet: %s\n", p.Entrant.Blocked)
	}
	wl := p.Workload
	fmt.Fprintf(w, "workload %s (dataset %s): %d messages of %s into %s, %s a message before the transform's filters\n",
		wl.Name, wl.DatasetVersion, wl.Messages, wl.Format, p.Table(), rowsWord(wl.RowsPerMessage))
	fmt.Fprintf(w, "envelope %s CPUs / %s = min(%d partitions, %d cores − %s infra − %s reserve)\n\n",
		schema.FormatCPUs(e.Envelope.CPUs), schema.FormatBytes(e.Envelope.Memory), e.Partitions, e.Host.Cores,
		schema.FormatCPUs(p.Budget.CPUs.Infra), schema.FormatCPUs(e.Reserve.CPUs))

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CONTAINER\tROLE\tCPUS\tMEMORY\tSWAP\tCPUSET\tHEAP\tPARALLELISM\tIMAGE")
	parName, par, _ := p.ParallelismKnob()
	for _, n := range p.ContainerNames() {
		c := p.Entrant.Containers[n]
		heap := "-"
		if c.JVM != nil {
			heap = fmt.Sprintf("%s (%s..%s)", schema.FormatBytes(c.JVM.Heap), schema.FormatBytes(c.JVM.Floor), schema.FormatBytes(c.JVM.Ceiling))
		}
		parallel := "-"
		if c.Role == schema.RoleDataPlane && parName != "" {
			parallel = fmt.Sprintf("%s=%v", parName, par.Value)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", n, c.Role, schema.FormatCPUs(c.CPUs), schema.FormatBytes(c.Memory),
			schema.FormatBytes(c.MemorySwap), dash(c.Cpuset), heap, parallel, c.Image)
	}
	for _, s := range e.Infra.Keyed() {
		img := s.Service.Run
		if s.Service.Image != nil {
			img = s.Service.Image.Ref
		}
		fmt.Fprintf(tw, "%s\tinfra/%s\t%s\t%s\t%s\t%s\t-\t-\t%s\n", s.Service.Name, s.Key, schema.FormatCPUs(s.Service.CPUs),
			schema.FormatBytes(s.Service.Memory), schema.FormatBytes(s.Service.MemorySwap), dash(s.Service.Cpuset), img)
	}
	tw.Flush()
	writePods(w, p)
	writeBuilds(w, p)

	if len(p.Entrant.Knobs) > 0 {
		names := make([]string, 0, len(p.Entrant.Knobs))
		for n := range p.Entrant.Knobs {
			names = append(names, n)
		}
		sort.Strings(names)
		parts := make([]string, len(names))
		for i, n := range names {
			parts[i] = fmt.Sprintf("%s=%v", n, p.Entrant.Knobs[n].Value)
		}
		fmt.Fprintf(w, "\nknobs: %s\n", strings.Join(parts, " "))
	}
	for _, z := range append(slices.Clone(p.Env.Sizing), p.Entrant.Sizing...) {
		fmt.Fprintf(w, "sizing %s = %s: %s\n", z.What, z.Value, z.Rule)
	}
	for _, d := range p.Entrant.Deviations {
		fmt.Fprintf(w, "deviation %s (affects %s): %s\n", d.ID, strings.Join(d.Affects, ", "), d.Why)
	}
	if f := p.Footprint; f != nil {
		fmt.Fprintf(w, "deviation footprint-%s (affects envelope): the data plane is given %s of the envelope's %s, a point of footprint study %s; never ranked\n",
			f.Study, f.Show(), footprint.Show(f.Axis, f.Full), f.Study)
	}
	for _, name := range slices.Sorted(maps.Keys(p.Entrant.Footprints)) {
		s := studyOf(p, p.Entrant.Footprints[name])
		rungs := make([]string, 0, 8)
		for _, c := range s.Ladder() {
			rungs = append(rungs, s.Show(c))
		}
		fmt.Fprintf(w, "footprint study %s (spatec footprint --env %s %s:%s): %s %s, then bisected until the gap is within %s; %d reps a point; degraded below %.2f× the envelope's rate; its points leave the envelope on purpose (deviation footprint-%s, affects envelope) and are never ranked\n",
			name, p.Env.Name, p.Entrant.Name, name, s.Axis, strings.Join(rungs, " → "), s.Show(s.Resolution), s.Reps, s.Fraction, name)
	}
	if len(p.Env.Scenarios) > 0 {
		fmt.Fprintf(w, "failure scenarios (%s):\n", heldTo(p.Entrant))
		for _, name := range slices.Sorted(maps.Keys(p.Env.Scenarios)) {
			fmt.Fprintf(w, "  %s: %s (spatec exec --env %s %s --scenario %s)\n",
				name, p.Env.Scenarios[name].Show(), p.Env.Name, p.Entrant.Name, name)
		}
	}
	if o := p.Entrant.SinkObjects; o != nil {
		fmt.Fprintf(w, "on the sink, before each repetition (and dropped after it):\n")
		for _, q := range o.Create {
			first, _, _ := strings.Cut(q, "\n")
			fmt.Fprintf(w, "  %s\n", first)
		}
	}
	fmt.Fprintf(w, "host budget: %s\n", p.BudgetSummary(true))
	fmt.Fprintf(w, "host memory: %s\n", p.BudgetSummary(false))
}

// writePods says, for a Kubernetes environment, which pod each container
// becomes: its QoS class, node and CPUs.
func writePods(w io.Writer, p *schema.Plan) {
	if p.Env.Runtime != "kubernetes" {
		return
	}
	m, err := kube.ForPlan(p)
	if err != nil {
		fmt.Fprintf(w, "\npods: %v\n", err)
		return
	}
	k := p.Env.Kubernetes
	fmt.Fprintf(w, "\npods in namespace %s (kubeconfig %s; `spatec plan -o k8s` prints them):\n", k.Namespace, cmp.Or(k.Kubeconfig, "in-cluster"))
	for _, pod := range m.Summary(k.ExclusiveCPUs) {
		cpus := pod.CPUs + " CPU"
		if pod.Exclusive {
			cpus += ", exclusive cores (static CPU manager)"
		}
		fmt.Fprintf(w, "  %s  %s  on node %s  QoS %s  %s\n", pod.Container, pod.Name, pod.Node, pod.QoS, cpus)
	}
}

// writeBuilds says how spatec makes each image of the plan it builds
// itself, and how each image it pulls is pinned, once per image.
func writeBuilds(w io.Writer, p *schema.Plan) {
	seen := map[string]bool{}
	arch := p.Env.Arch.Name()
	say := func(ref string, b *schema.Build) {
		if seen[ref] {
			return
		}
		if b == nil {
			writePin(w, p, ref, len(seen) == 0)
			seen[ref] = true
			return
		}
		if len(seen) == 0 {
			fmt.Fprintln(w)
		}
		seen[ref] = true
		switch {
		case b.Program != "":
			fmt.Fprintf(w, "image %s: built from the Go program %s for linux/%s, FROM scratch%s\n", ref, b.Program, arch, source(p, ref))
		case b.Debian != nil:
			adds := ""
			switch n := len(b.Debian.Downloads); n {
			case 0:
			case 1:
				adds = " and 1 checked download"
			default:
				adds = fmt.Sprintf(" and %d checked downloads", n)
			}
			for _, c := range b.Debian.Compile {
				switch {
				case c.Cargo != nil:
					adds += fmt.Sprintf(", with %s compiled from the crate %s (cargo, locked)", c.Cargo.Bin, c.Cargo.Crate)
				case c.Maven != nil:
					adds += fmt.Sprintf(", with %s packaged from the Maven project %s", c.Maven.Jar, c.Maven.Project)
				}
			}
			recipe := *b.Debian
			var missing []artefact.Unpinned
			recipe.Downloads, missing = artefact.PinDownloads(recipe.Downloads, &p.Env)
			digest := "recipe " + debimage.Digest(recipe, p.Env.Arch)
			if len(missing) > 0 {
				digest = "its recipe named once its downloads are pinned"
			}
			fmt.Fprintf(w, "image %s: built from Debian %s packages %s for %s%s (%s)%s\n",
				ref, b.Debian.Suite, strings.Join(b.Debian.Packages, " "), arch, adds, digest, source(p, ref))
			writeDownloadPins(w, p, b.Debian.Downloads)
		case b.Layered != nil:
			pinned, missing := layered.Pin(*b.Layered, &p.Env)
			var adds []string
			for _, d := range pinned.Downloads {
				if d.SHA256 == "" {
					adds = append(adds, d.URL) // its line below says it is unpinned
					continue
				}
				adds = append(adds, fmt.Sprintf("%s (sha256 %s)", d.URL, d.SHA256))
			}
			for _, m := range b.Layered.Maven {
				adds = append(adds, fmt.Sprintf("the runtime closure of %s", m.Artifact))
			}
			if n := len(b.Layered.Files); n > 0 {
				adds = append(adds, fmt.Sprintf("%d files", n))
			}
			digest := "build " + layered.Digest(pinned, p.Env.Arch)
			if len(missing) > 0 {
				digest = "its build named once what it adds is pinned"
			}
			fmt.Fprintf(w, "image %s: built on %s for %s adding %s (%s)\n",
				ref, b.Layered.From, arch, strings.Join(adds, ", "), digest)
			writeDownloadPins(w, p, b.Layered.Downloads)
			for _, m := range b.Layered.Maven {
				writeClosurePin(w, p, m)
			}
		}
	}
	for _, n := range p.ContainerNames() {
		c := p.Entrant.Containers[n]
		say(c.Image, c.Build)
		if c.Build != nil && c.Build.Layered != nil {
			say(c.Build.Layered.From, nil)
		}
	}
	for _, svc := range p.Env.Infra.Services() {
		if svc.Image == nil {
			continue
		}
		ref := svc.Image.Ref
		if svc.Image.Digest != "" {
			ref += "@" + svc.Image.Digest
		}
		say(ref, svc.Build)
	}
}

// writePin says how an image spatec pulls is pinned: by its own digest, by
// the environment's pins, or not at all (refused in an authoritative
// environment, C16).
func writePin(w io.Writer, p *schema.Plan, ref string, first bool) {
	if first {
		fmt.Fprintln(w)
	}
	switch d, ok := p.Env.Pins[ref]; {
	case strings.Contains(ref, "@"):
		fmt.Fprintf(w, "image %s: pinned by its digest\n", ref)
	case ok:
		fmt.Fprintf(w, "image %s: pinned to %s (envs/%s/pins.cue)\n", ref, d, p.Env.Name)
	case p.Env.Class == "authoritative":
		fmt.Fprintf(w, "image %s: NOT PINNED, exec refuses it (C16): run `spatec pin --env %s` where its registry can be reached\n", ref, p.Env.Name)
	default:
		fmt.Fprintf(w, "image %s: not pinned (a fixture runs it as found)\n", ref)
	}
}

// writeDownloadPins says, for each download declared without its sha256,
// whether the environment pins it; one that it does not is refused in any
// environment (C16).
func writeDownloadPins(w io.Writer, p *schema.Plan, ds []schema.Download) {
	for _, d := range ds {
		if d.SHA256 != "" {
			continue
		}
		if pin, ok := p.Env.Pins[d.URL]; ok {
			fmt.Fprintf(w, "  download %s: pinned to %s (envs/%s/pins.cue)\n", d.URL, pin, p.Env.Name)
			continue
		}
		u := artefact.Unpinned{URL: d.URL}
		fmt.Fprintf(w, "  download %s: NOT PINNED, exec refuses it (C16): run `spatec pin --env %s` where %s can be reached\n", d.URL, p.Env.Name, u.Reach())
	}
}

// writeClosurePin says whether the environment pins the closure of a Maven
// artifact an image adds: its jars, and the digest of their list.
func writeClosurePin(w io.Writer, p *schema.Plan, m schema.MavenArtifact) {
	jars, ok := p.Env.Closures[m.Artifact]
	if !ok {
		u := artefact.Unpinned{Maven: &m}
		fmt.Fprintf(w, "  closure of %s into %s: NOT PINNED, exec refuses it (C16): run `spatec pin --env %s` where %s can be reached\n",
			m.Artifact, m.To, p.Env.Name, u.Reach())
		return
	}
	fmt.Fprintf(w, "  closure of %s into %s: pinned, %d jars (list %s, envs/%s/pins.cue)\n",
		m.Artifact, m.To, len(jars), artefact.ClosureDigest(jars), p.Env.Name)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// rowsWord is "1 row" or "n rows".
func rowsWord(n int) string {
	if n == 1 {
		return "1 row"
	}
	return fmt.Sprintf("%d rows", n)
}

// heldTo says what a scenario holds the arm to: its restart policy and the
// delivery guarantee it declares.
func heldTo(e schema.Entrant) string {
	g := "no delivery guarantee declared, so each is refused"
	if e.Guarantee != nil {
		g = "held to " + e.Guarantee.Kind + "; source: " + e.Guarantee.Source
	}
	return "the data plane's restart policy " + e.Restart + "; " + g
}
