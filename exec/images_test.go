package exec

import (
	"context"
	"debug/elf"
	"errors"
	"runtime"
	"strings"
	"testing"

	"spatec.dev/spatec/exec/burn/burntest"
	"spatec.dev/spatec/exec/engine"
	"spatec.dev/spatec/internal/testregistry"
	"spatec.dev/spatec/schema"
)

func TestOneImageReferenceIsBuiltOneWay(t *testing.T) {
	s := &Session{images: map[string]image{
		"spatec-x:1": {ref: "spatec-x:1", id: "sha256:aa", build: &schema.Build{Program: "./cmd/x"}},
	}}
	img, err := s.ensureImage(context.Background(), "spatec-x:1", "", &schema.Build{Program: "./cmd/x"})
	if err != nil || img.id != "sha256:aa" {
		t.Fatalf("the same build again: %+v, %v; want the image already made", img, err)
	}
	_, err = s.ensureImage(context.Background(), "spatec-x:1", "", &schema.Build{Program: "./cmd/y"})
	var ref *Refusal
	if !errors.As(err, &ref) || !strings.Contains(err.Error(), "image spatec-x:1 is declared twice, built two ways (from the program ./cmd/x and from the program ./cmd/y)") {
		t.Fatalf("another build of the same reference: %v; want a refusal naming both", err)
	}
}

// TestImagesArePinned: an image runs by its own digest, else by the
// environment's pin; an authoritative environment refuses one with
// neither (C16), a fixture runs it as written.
func TestImagesArePinned(t *testing.T) {
	a := strings.Repeat("a", 64)
	b := strings.Repeat("b", 64)
	s := &Session{env: schema.Environment{Name: "bench", Class: "authoritative", Pins: map[string]string{
		"registry.local:5000/redpanda:v24.2.1": "sha256:" + b,
		"apache/kafka:4.3.1":                   "sha256:" + b,
	}}}
	for _, tc := range []struct{ ref, digest, want string }{
		{"clickhouse/clickhouse-server:24.8", "sha256:" + a, "clickhouse/clickhouse-server@sha256:" + a},
		{"registry.local:5000/redpanda:v24.2.1", "", "registry.local:5000/redpanda@sha256:" + b},
		{"apache/kafka:4.3.1", "", "apache/kafka@sha256:" + b},
		{"apache/kafka@sha256:" + a, "", "apache/kafka@sha256:" + a},
	} {
		if got, err := s.pinned(tc.ref, tc.digest); err != nil || got != tc.want {
			t.Errorf("pinned(%s, %q) = %s, %v; want %s", tc.ref, tc.digest, got, err, tc.want)
		}
	}
	_, err := s.pinned("timberio/vector:0.57.0-debian", "")
	var ref *Refusal
	if !errors.As(err, &ref) || !strings.Contains(err.Error(), "C16: image timberio/vector:0.57.0-debian is not pinned in bench") ||
		!strings.Contains(err.Error(), "run `spatec pin --env bench`") {
		t.Errorf("an unpinned image in an authoritative environment: %v", err)
	}
	s.env.Class = "fixture"
	if got, err := s.pinned("spatec-broker:0.1.0", ""); err != nil || got != "spatec-broker:0.1.0" {
		t.Errorf("a fixture's unpinned image: %s, %v", got, err)
	}
}

// TestMissingImagesArePulledByTheirPin: an authoritative environment's
// pinned image is pulled from its registry (one on the loopback here) when
// the engine lacks it; with pulling off, every missing image is named.
func TestMissingImagesArePulledByTheirPin(t *testing.T) {
	e := newEngine(t)
	ctx := context.Background()
	reg := testregistry.Start(t)
	tag, digest := burntest.Publish(t, reg)
	t.Cleanup(func() { _ = e.RemoveImage(context.Background(), reg.Host+"/spatec/burn@"+digest) })

	env := holdEnv()
	env.Class, env.Pins = "authoritative", map[string]string{tag: digest}
	plan := burnPlan(env, entrantName("pulled"), 0.5, 64*mib)
	c := plan.Entrant.Containers["burn"]
	c.Image = tag
	plan.Entrant.Containers["burn"] = c

	off := newRunner(t, e, nil)
	off.NoPull = true
	_, err := off.Open(ctx, env, true, plan)
	if err == nil || !strings.Contains(err.Error(), "images:\n  "+plan.Entrant.Name+": container burn: image "+reg.Host+"/spatec/burn@"+digest+" is not on this engine, and pulling is off") {
		t.Fatalf("opening with pulling off: %v; want the missing image named", err)
	}
	s, err := newRunner(t, e, nil).Open(ctx, env, true, plan)
	if err != nil {
		t.Fatalf("opening with the image to pull: %v", err)
	}
	defer s.Close()
	if got := s.images[tag]; got.ref != reg.Host+"/spatec/burn@"+digest || got.id == "" || reg.Pulls() != 1 {
		t.Errorf("image %+v after %d pulls; want it pulled once, by its digest", got, reg.Pulls())
	}
}

// The image a container runs, as Docker (an ID) or a kubelet (an ID, or
// repo@digest) reports it, is the one resolved only when the digests agree;
// an engine that reports none has not shown it.
func TestRunsImage(t *testing.T) {
	const id = "sha256:4d5b0e2a"
	for got, want := range map[string]bool{
		id:                                   true,
		"docker.io/library/spatec@" + id:     true,
		"sha256:ffff0000":                    false,
		"docker.io/library/spatec@sha256:ff": false,
		"":                                   false,
	} {
		if runsImage(got, id) != want {
			t.Errorf("runsImage(%q, %q) = %v, want %v", got, id, !want, want)
		}
	}
}

// TestUnpinnedArtefactsAreRefused: an image that adds a download declared
// without its sha256, or a Maven closure, is refused until the environment
// pins them, in a fixture as in an authoritative environment, each named
// with the command that pins it; once pinned, the plan passes.
func TestUnpinnedArtefactsAreRefused(t *testing.T) {
	const url = "https://example.org/tool-1.0.tar.gz"
	maven := schema.MavenArtifact{Repositories: []string{"https://repo.example.org/maven/"}, Artifact: "org.example:plugin:1.0", To: "/opt/plugins/plugin"}
	plan := &schema.Plan{Entrant: schema.Entrant{Name: "arm", Containers: map[string]schema.Container{
		"worker": {Image: "spatec-worker:1", Build: &schema.Build{Layered: &schema.Layered{From: "base:1", Maven: []schema.MavenArtifact{maven}}}},
		"helper": {Image: "spatec-helper:1", Build: &schema.Build{Debian: &schema.Debian{Suite: "trixie", Downloads: []schema.Download{{URL: url, To: "/opt/tool"}}}}},
	}}}
	env := schema.Environment{Name: "fixture", Class: "fixture"}
	err := CheckPinned(env, []*schema.Plan{plan})
	var ref *Refusal
	if !errors.As(err, &ref) {
		t.Fatalf("unpinned artefacts: %v; want a refusal", err)
	}
	for _, want := range []string{
		"arm: container helper: image spatec-helper:1: C16: download " + url + " is not pinned in fixture, so nothing would check what goes into the image; run `spatec pin --env fixture` on a host that reaches " + url,
		"\nREFUSED: arm: container worker: image spatec-worker:1: C16: the runtime closure of Maven artifact org.example:plugin:1.0 (into /opt/plugins/plugin) is not pinned in fixture",
		"on a host that reaches https://repo.example.org/maven/ and Maven Central, review what it writes to envs/fixture/pins.cue",
	} {
		if !strings.Contains(ref.Reason, want) {
			t.Errorf("refusal:\n%s\nwant it to say:\n%s", ref.Reason, want)
		}
	}
	env.Pins = map[string]string{url: "sha256:" + strings.Repeat("c", 64)}
	env.Closures = map[string][]schema.ClosureJar{maven.Artifact: {{URL: "https://repo.example.org/maven/org/example/plugin/1.0/plugin-1.0.jar", SHA256: strings.Repeat("d", 64)}}}
	if err := CheckPinned(env, []*schema.Plan{plan}); err != nil {
		t.Errorf("with the environment's pins: %v", err)
	}
}

// TestProgramIsBuiltForTheEnvironmentsArchitecture: a Go program image
// holds a binary for the environment's architecture, whatever the host's:
// the reference arm built for arm64 here is an aarch64 ELF (and for
// amd64 an x86-64 one, on an arm64 host).
func TestProgramIsBuiltForTheEnvironmentsArchitecture(t *testing.T) {
	other, machine := schema.ARM64, elf.EM_AARCH64
	if runtime.GOARCH == string(schema.ARM64) {
		other, machine = schema.AMD64, elf.EM_X86_64
	}
	bin, err := CompileProgram(context.Background(), repoRoot(t), "./cmd/spatec-reference", t.TempDir(), other)
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Machine != machine || f.Class != elf.ELFCLASS64 {
		t.Errorf("the program built for %s is a %v %v binary, want %v", other, f.Class, f.Machine, machine)
	}
	// Static, as a FROM scratch image needs: no interpreter to load it.
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the program asks for a dynamic loader; a FROM scratch image has none")
		}
	}
}

// TestAnotherArchitectureIsRefused: an environment runs only on an engine
// of its architecture, as Docker (the kernel's names) or Kubernetes (Go's)
// reports it; any other, or none, is refused with what to do.
func TestAnotherArchitectureIsRefused(t *testing.T) {
	arm := schema.Environment{Name: "c8g", Arch: schema.ARM64}
	amd := schema.Environment{Name: "bench"}
	for _, ok := range []struct {
		env  schema.Environment
		host string
	}{{arm, "aarch64"}, {arm, "arm64"}, {amd, "x86_64"}, {amd, "amd64"}} {
		if err := checkArch(ok.env, engine.HostInfo{Architecture: ok.host}); err != nil {
			t.Errorf("%s (%s) on an engine reporting %s: %v", ok.env.Name, ok.env.Arch.Name(), ok.host, err)
		}
	}
	for _, no := range []struct {
		env        schema.Environment
		host, want string
	}{
		{arm, "x86_64", "c8g is an arm64 environment (its arch), and the engine reports architecture x86_64: what spatec builds for it would not run on this host, or would run emulated and be measured so; run it on an arm64 host"},
		{amd, "aarch64", "bench is an amd64 environment (its arch), and the engine reports architecture aarch64"},
		{amd, "", "bench is an amd64 environment (its arch), and the engine reports no architecture"},
	} {
		err := checkArch(no.env, engine.HostInfo{Architecture: no.host})
		var ref *Refusal
		if !errors.As(err, &ref) || !strings.HasPrefix(err.Error(), no.want) {
			t.Errorf("%s on an engine reporting %q: %v; want a refusal saying %q", no.env.Name, no.host, err, no.want)
		}
	}
}
