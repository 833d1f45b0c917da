package docker_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sys/unix"

	"spatec.dev/spatec/exec/burn/burntest"
	"spatec.dev/spatec/exec/engine"
	"spatec.dev/spatec/exec/engine/docker"
	"spatec.dev/spatec/internal/testenv"
	"spatec.dev/spatec/internal/testregistry"
	"spatec.dev/spatec/schema"
)

const (
	mib = int64(1) << 20
	// testLabel marks everything a test creates; each test gets its own
	// value, and its cleanup removes everything carrying it.
	testLabel = "dev.spatec.test"
)

// newEngine connects to the local engine, or fails (CI) or skips the test.
func newEngine(t testing.TB) *docker.Engine { return testenv.Docker(t) }

// scope returns a label value unique to this test and registers the
// teardown of everything labelled with it.
func scope(t testing.TB, e *docker.Engine) string {
	t.Helper()
	value := "t-" + uuid.NewString()[:8]
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := e.RemoveByLabel(ctx, testLabel, value); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return value
}

func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestCreateAppliesExactCaps(t *testing.T) {
	e := newEngine(t)
	ctx := testContext(t)
	run := scope(t, e)
	img := burntest.Image(t, e)

	spec := engine.ContainerSpec{
		Name:       "spatec-caps-" + run,
		Image:      img,
		Args:       []string{"-cpu", "0.1", "-anon", "8MiB"},
		Env:        map[string]string{"B": "2", "A": "1"},
		Labels:     map[string]string{testLabel: run, "dev.spatec.role": "data-plane"},
		NanoCPUs:   5e8,
		Memory:     256 * mib,
		MemorySwap: 256 * mib,
	}
	created, err := e.Create(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(created.Warnings) > 0 {
		t.Fatalf("create warnings mean a cap was dropped: %q", created.Warnings)
	}
	if err := e.Start(ctx, created.ID); err != nil {
		t.Fatal(err)
	}
	c, err := e.Inspect(ctx, created.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := engine.Resources{NanoCPUs: 5e8, Memory: 256 * mib, MemorySwap: 256 * mib}
	got := c.Resources
	got.ShmSize = 0 // the engine's default, not a cap under test
	if got != want {
		t.Errorf("caps as applied = %+v, want %+v", got, want)
	}
	if c.Name != spec.Name || !c.Running || c.Pid <= 0 {
		t.Errorf("inspect: name %q running %v pid %d, want %q running with a pid", c.Name, c.Running, c.Pid, spec.Name)
	}
	for k, v := range spec.Labels {
		if c.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, c.Labels[k], v)
		}
	}
	if !strings.HasPrefix(c.ImageID, "sha256:") {
		t.Errorf("image ID %q, want sha256:…", c.ImageID)
	}
	if _, err := os.Stat(filepath.Join("/proc", strconv.Itoa(c.Pid), "cgroup")); err != nil {
		t.Errorf("the container's process has no cgroup file to locate its cgroup by: %v", err)
	}
}

func TestEarlyExitGivesCodeAndLogTail(t *testing.T) {
	e := newEngine(t)
	ctx := testContext(t)
	run := scope(t, e)
	img := burntest.Image(t, e)

	created, err := e.Create(ctx, engine.ContainerSpec{
		Name:       "spatec-exit-" + run,
		Image:      img,
		Args:       []string{"-exit", "3"},
		Labels:     map[string]string{testLabel: run},
		NanoCPUs:   5e8,
		Memory:     64 * mib,
		MemorySwap: 64 * mib,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(ctx, created.ID); err != nil {
		t.Fatal(err)
	}
	code, err := e.Wait(ctx, created.ID)
	if err != nil {
		t.Fatal(err)
	}
	if code != 3 {
		t.Errorf("exit code %d, want 3", code)
	}
	logs, err := e.Logs(ctx, created.ID, 5)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs, "exiting with code 3") || !strings.Contains(logs, "burn ready") {
		t.Errorf("log tail %q lacks the ready line (stdout) and the exit line (stderr)", logs)
	}
	one, err := e.Logs(ctx, created.ID, 1)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(strings.TrimSpace(one), "\n") != 0 {
		t.Errorf("a one-line tail gave %q", one)
	}
	c, err := e.Inspect(ctx, created.ID)
	if err != nil {
		t.Fatal(err)
	}
	if c.Running || c.ExitCode != 3 || c.FinishedAt.IsZero() {
		t.Errorf("inspect after exit: running %v exit %d finished %v", c.Running, c.ExitCode, c.FinishedAt)
	}
}

// TestReadFileFromStoppedContainer copies a file out of a container that
// has exited, as the executor reads a JVM arm's GC log after the drain.
func TestReadFileFromStoppedContainer(t *testing.T) {
	e := newEngine(t)
	ctx := testContext(t)
	run := scope(t, e)
	created, err := e.Create(ctx, engine.ContainerSpec{
		Name:       "spatec-read-" + run,
		Image:      burntest.Image(t, e),
		Args:       []string{"-exit", "0"},
		Files:      map[string]string{"/tmp/log.txt": "line one\nline two\n"},
		Labels:     map[string]string{testLabel: run},
		NanoCPUs:   5e8,
		Memory:     64 * mib,
		MemorySwap: 64 * mib,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(ctx, created.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Wait(ctx, created.ID); err != nil {
		t.Fatal(err)
	}
	if b, err := e.ReadFile(ctx, created.ID, "/tmp/log.txt", 1<<20); err != nil || string(b) != "line one\nline two\n" {
		t.Errorf("ReadFile = %q, %v", b, err)
	}
	if b, err := e.ReadFile(ctx, created.ID, "/tmp/log.txt", 8); err != nil || string(b) != "line one" {
		t.Errorf("ReadFile with a limit of 8 = %q, %v", b, err)
	}
	if _, err := e.ReadFile(ctx, created.ID, "/tmp/none", 1<<20); !errors.Is(err, engine.ErrNoFile) {
		t.Errorf("a missing file: got %v, want ErrNoFile", err)
	}
	if _, err := e.ReadFile(ctx, created.ID, "/tmp", 1<<20); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a directory: got %v", err)
	}
}

func TestStopEndsBurnPromptly(t *testing.T) {
	e := newEngine(t)
	ctx := testContext(t)
	run := scope(t, e)
	img := burntest.Image(t, e)

	created, err := e.Create(ctx, engine.ContainerSpec{
		Name: "spatec-stop-" + run, Image: img, Labels: map[string]string{testLabel: run},
		NanoCPUs: 2e8, Memory: 32 * mib, MemorySwap: 32 * mib,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(ctx, created.ID); err != nil {
		t.Fatal(err)
	}
	// Stop only once burn says it is ready: a signal that arrives before
	// its handler is installed would test the Go runtime, not burn.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		logs, err := e.Logs(ctx, created.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(logs, "burn ready") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("burn never said it was ready; its log:\n%s", logs)
		}
	}
	// burn runs as PID 1, which ignores SIGTERM unless it handles it; exit
	// code 0 (not 137) shows it handled it rather than being killed after
	// the grace period.
	if err := e.Stop(ctx, created.ID, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	c, err := e.Inspect(ctx, created.ID)
	if err != nil {
		t.Fatal(err)
	}
	if c.Running || c.ExitCode != 0 {
		t.Errorf("after stop: running %v exit %d; want stopped with 0", c.Running, c.ExitCode)
	}
}

func TestRemoveByLabelLeavesNothing(t *testing.T) {
	e := newEngine(t)
	ctx := testContext(t)
	run := scope(t, e)
	other := scope(t, e)
	img := burntest.Image(t, e)
	labels := map[string]string{testLabel: run}

	netName := "spatec-net-" + run
	if _, err := e.CreateNetwork(ctx, netName, labels); err != nil {
		t.Fatal(err)
	}
	spec := engine.ContainerSpec{
		Image: img, Labels: labels, NetworkMode: netName,
		Memory: 32 * mib, MemorySwap: 32 * mib, NanoCPUs: 1e8,
	}
	// One running on the network, one created and never started.
	running := spec
	running.Name, running.NetworkAliases = "spatec-run-"+run, []string{"burner"}
	running.Publish = map[string]string{"8081/tcp": ""} // any free host port
	idle := spec
	idle.Name = "spatec-idle-" + run
	for i, s := range []engine.ContainerSpec{running, idle} {
		created, err := e.Create(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if err := e.Start(ctx, created.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A container under another label value must survive the teardown.
	bystander := spec
	bystander.Name, bystander.NetworkMode, bystander.Labels = "spatec-bystander-"+other, "", map[string]string{testLabel: other}
	if _, err := e.Create(ctx, bystander); err != nil {
		t.Fatal(err)
	}

	before, err := e.ListByLabel(ctx, testLabel, run)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(before.Containers)
	if !slices.Equal(before.Containers, []string{idle.Name, running.Name}) || !slices.Equal(before.Networks, []string{netName}) {
		t.Fatalf("before teardown: %+v, want the 2 containers and the network", before)
	}

	if err := e.RemoveByLabel(ctx, testLabel, run); err != nil {
		t.Fatal(err)
	}
	after, err := e.ListByLabel(ctx, testLabel, run)
	if err != nil {
		t.Fatal(err)
	}
	if !after.Empty() {
		t.Errorf("left behind after teardown: %+v", after)
	}
	kept, err := e.ListByLabel(ctx, testLabel, other)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(kept.Containers, []string{bystander.Name}) {
		t.Errorf("teardown of %s=%s touched other containers: left %v, want %v", testLabel, run, kept.Containers, []string{bystander.Name})
	}
}

// TestVolumeIsSharedAndRemovedWithItsLabel: two containers that name one
// volume see each other's files (a Flink cluster's checkpoints), and the
// teardown by label removes the volume with them.
func TestVolumeIsSharedAndRemovedWithItsLabel(t *testing.T) {
	e := newEngine(t)
	ctx := testContext(t)
	run := scope(t, e)
	labels := map[string]string{testLabel: run}
	vol := "spatec-vol-" + run
	img := burntest.Image(t, e)
	spec := func(name string) engine.ContainerSpec {
		return engine.ContainerSpec{
			Name: name, Image: img, Labels: labels,
			Memory: 32 * mib, MemorySwap: 32 * mib, NanoCPUs: 1e8,
			Volumes: map[string]string{"/shared": vol},
		}
	}
	// A file written into one container's mount is in the other's.
	w := spec("spatec-writer-" + run)
	w.Files = map[string]string{"/shared/checkpoint": "chk-1"}
	if _, err := e.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	reader, err := e.Create(ctx, spec("spatec-reader-"+run))
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.ReadFile(ctx, reader.ID, "/shared/checkpoint", 1<<10)
	if err != nil || string(got) != "chk-1" {
		t.Fatalf("the reader's /shared/checkpoint: %q, %v; want what the writer put there", got, err)
	}
	before, err := e.ListByLabel(ctx, testLabel, run)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(before.Volumes, []string{vol}) {
		t.Fatalf("volumes under the label: %v, want [%s]", before.Volumes, vol)
	}
	if err := e.RemoveByLabel(ctx, testLabel, run); err != nil {
		t.Fatal(err)
	}
	if after, err := e.ListByLabel(ctx, testLabel, run); err != nil || !after.Empty() {
		t.Errorf("left behind after teardown: %+v, %v", after, err)
	}
}

func TestRemoveByLabelRefusesEmptyKey(t *testing.T) {
	e := newEngine(t)
	err := e.RemoveByLabel(testContext(t), "", "x")
	if err == nil || !strings.Contains(err.Error(), "no label key given") {
		t.Fatalf("got %v, want a refusal naming the missing key", err)
	}
}

func TestNewUnreachableNamesSocketAndFix(t *testing.T) {
	sock := "unix://" + filepath.Join(t.TempDir(), "absent.sock")
	t.Setenv("DOCKER_HOST", sock)
	_, err := docker.New(context.Background())
	if err == nil {
		t.Fatal("New succeeded against a socket that does not exist")
	}
	t.Log(err)
	for _, want := range []string{sock, "from DOCKER_HOST", "bash .ci/services", "systemctl start docker"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}

func TestMissingImageIsClear(t *testing.T) {
	e := newEngine(t)
	ctx := testContext(t)
	run := scope(t, e)
	const ref = "spatec-absent:never-built"

	_, err := e.Create(ctx, engine.ContainerSpec{
		Name: "spatec-missing-" + run, Image: ref, Labels: map[string]string{testLabel: run},
		Memory: 32 * mib, MemorySwap: 32 * mib,
	})
	var missing *engine.ImageMissingError
	if !errors.As(err, &missing) || missing.Ref != ref {
		t.Fatalf("create with a missing image: got %v, want an ImageMissingError for %s", err, ref)
	}
	t.Log(err)
	want := "image " + ref + " is not present on this engine; build or load it first"
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}

	if _, err := e.ImageDigest(ctx, ref); !errors.As(err, &missing) {
		t.Errorf("ImageDigest of a missing image: got %v, want an ImageMissingError", err)
	}
	if ok, err := e.ImageExists(ctx, ref); err != nil || ok {
		t.Errorf("ImageExists(%s) = %v, %v; want false, nil", ref, ok, err)
	}
}

func TestCheckCPUs(t *testing.T) {
	err := engine.CheckCPUs(32, 2)
	want := "the plan asks 32 CPUs; this host has 2; use an environment sized for it"
	if err == nil || err.Error() != want {
		t.Errorf("CheckCPUs(32, 2) = %v, want %q", err, want)
	}
	if err := engine.CheckCPUs(2, 2); err != nil {
		t.Errorf("CheckCPUs(2, 2) = %v, want nil: all of the host's CPUs is allowed", err)
	}
	if err := engine.CheckCPUs(0.5, 2); err != nil {
		t.Errorf("CheckCPUs(0.5, 2) = %v, want nil", err)
	}
	if err := engine.CheckCPUs(2.01, 2); err == nil || !strings.Contains(err.Error(), "asks 2.01 CPUs; this host has 2") {
		t.Errorf("CheckCPUs(2.01, 2) = %v, want a refusal quoting 2.01", err)
	}
	if err := engine.CheckCPUs(0, 2); err == nil || !strings.Contains(err.Error(), "positive") {
		t.Errorf("CheckCPUs(0, 2) = %v, want a refusal", err)
	}
}

func TestCreateRefusesBadSpecs(t *testing.T) {
	e := newEngine(t)
	ctx := testContext(t)
	run := scope(t, e)
	info, err := e.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	base := engine.ContainerSpec{
		Name: "spatec-bad-" + run, Image: "spatec-absent:never-built", Labels: map[string]string{testLabel: run},
		Memory: 32 * mib, MemorySwap: 32 * mib,
	}
	tooMany := base
	tooMany.NanoCPUs = int64(info.NCPU+30) * 1e9
	noSwap := base
	noSwap.MemorySwap = 0

	cases := []struct {
		name string
		spec engine.ContainerSpec
		want string
	}{
		{"cpus above host", tooMany, "the plan asks " + strconv.Itoa(info.NCPU+30) + " CPUs; this host has " + strconv.Itoa(info.NCPU) + "; use an environment sized for it"},
		{"memory without swap", noSwap, "MemorySwap is unset; set MemorySwap to 33554432"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.Create(ctx, tc.spec)
			t.Log(err)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestRunOnceReadsVersion(t *testing.T) {
	e := newEngine(t)
	ctx := testContext(t)
	run := scope(t, e)
	img := burntest.Image(t, e)

	var lines []string
	code, logs, err := e.RunOnce(ctx, engine.ContainerSpec{
		Name: "spatec-version-" + run, Image: img, Args: []string{"-version"},
		Labels: map[string]string{testLabel: run}, Memory: 32 * mib, MemorySwap: 32 * mib,
	}, func(line string) { lines = append(lines, line) })
	if err != nil {
		t.Fatal(err)
	}
	if code != 0 || strings.TrimSpace(logs) != "burn "+burntest.Version {
		t.Errorf("RunOnce -version: exit %d, output %q; want 0 and %q", code, logs, "burn "+burntest.Version)
	}
	if len(lines) != 1 || lines[0] != "burn "+burntest.Version {
		t.Errorf("RunOnce followed the lines %q; want [%q]", lines, "burn "+burntest.Version)
	}
	left, err := e.ListByLabel(ctx, testLabel, run)
	if err != nil {
		t.Fatal(err)
	}
	if !left.Empty() {
		t.Errorf("RunOnce left %+v behind", left)
	}
}

func TestBuildScratchImage(t *testing.T) {
	e := newEngine(t)
	ctx := testContext(t)
	img := burntest.Image(t, e)

	got, err := e.ImageDigest(ctx, img)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got.ID, "sha256:") || len(got.Labels[burntest.SHA256Label]) != 64 {
		t.Errorf("burn image: ID %q labels %v; want a sha256 ID and the binary's digest label", got.ID, got.Labels)
	}

	// An image for another architecture than the engine's is declared for
	// it: the engine reports the architecture it was asked for.
	other := "arm64"
	if runtime.GOARCH == other {
		other = "amd64"
	}
	tag := "spatec-arch-test:" + uuid.NewString()[:8]
	t.Cleanup(func() { _ = e.RemoveImage(context.Background(), tag) })
	if _, err := e.BuildScratchImage(ctx, engine.ScratchImage{Tag: tag, Files: map[string][]byte{"a": []byte("a")}, Entrypoint: []string{"/a"}, Arch: other}); err != nil {
		t.Fatal(err)
	}
	if got, err := e.ImageDigest(ctx, tag); err != nil || got.Architecture != other {
		t.Errorf("an image built for %s: %+v, %v; want it declared for %s", other, got, err, other)
	}

	bad := []struct {
		name string
		img  engine.ScratchImage
		want string
	}{
		{"entrypoint not a file", engine.ScratchImage{Tag: "spatec-bad:test", Files: map[string][]byte{"a": nil}, Entrypoint: []string{"/b"}}, `entrypoint "/b" is not one of the image's files [/a]`},
		{"escaping path", engine.ScratchImage{Tag: "spatec-bad:test", Files: map[string][]byte{"../a": nil}, Entrypoint: []string{"/a"}}, `file path "../a"`},
		{"no entrypoint", engine.ScratchImage{Tag: "spatec-bad:test", Files: map[string][]byte{"a": nil}}, "no entrypoint given"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.BuildScratchImage(ctx, tc.img)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestRebuildRemovesWhatItReplaced: building again under a tag removes
// the image the tag named before, when this tool built it and nothing uses
// it; an image a container still uses, or one built by someone else, stays.
func TestRebuildRemovesWhatItReplaced(t *testing.T) {
	e := newEngine(t)
	ctx := testContext(t)
	tag := "spatec-rebuilt-test:" + uuid.NewString()[:8]
	t.Cleanup(func() { _ = e.RemoveImage(context.Background(), tag) })
	build := func(content string, labels map[string]string) string {
		t.Helper()
		id, err := e.BuildScratchImage(ctx, engine.ScratchImage{
			Tag: tag, Files: map[string][]byte{"a": []byte(content)}, Entrypoint: []string{"/a"}, Labels: labels,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.RemoveUnnamed(context.Background(), id) })
		return id
	}
	present := func(id string) bool {
		t.Helper()
		ok, err := e.ImageExists(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	ours := map[string]string{"dev.spatec.program": "test"}

	foreign := build("someone else's", nil)
	first := build("one", ours)
	if !present(foreign) {
		t.Error("an image built without this tool's label was removed when the tag moved")
	}
	second := build("two", ours)
	if present(first) {
		t.Errorf("image %s, which the rebuild replaced, is still on the engine", first)
	}

	used, err := e.Create(ctx, engine.ContainerSpec{Name: "spatec-rebuilt-" + uuid.NewString()[:8], Image: tag, NetworkMode: "none"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Remove(ctx, used.ID)
	third := build("three", ours)
	if !present(second) {
		t.Errorf("image %s, which a container uses, was removed by a rebuild", second)
	}
	if got, err := e.ImageDigest(ctx, tag); err != nil || got.ID != third {
		t.Errorf("%s names %+v, %v; want %s", tag, got, err, third)
	}
}

func TestBuildErrorInStreamIsReported(t *testing.T) {
	e := newEngine(t)
	ctx := testContext(t)
	dir := t.TempDir()
	dockerfile := "FROM scratch\nCOPY not-in-context /x\n"
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(dockerfile), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := e.BuildContextDir(ctx, "spatec-broken:test", dir, nil)
	if err == nil {
		t.Fatal("a build copying a file that is not in the context succeeded")
	}
	t.Log(err)
	for _, want := range []string{"building image spatec-broken:test", "not-in-context", "COPY not-in-context /x"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}

func TestInfoReportsHostFacts(t *testing.T) {
	e := newEngine(t)
	info, err := e.Info(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	var uts unix.Utsname
	if err := unix.Uname(&uts); err != nil {
		t.Fatal(err)
	}
	if kernel := unix.ByteSliceToString(uts.Release[:]); info.KernelVersion != kernel {
		t.Errorf("kernel %q, uname says %q", info.KernelVersion, kernel)
	}
	// The architecture, as the kernel names it: what exec holds an
	// environment's arch to.
	if machine := unix.ByteSliceToString(uts.Machine[:]); info.Architecture != machine || string(schema.ArchOf(machine)) != runtime.GOARCH {
		t.Errorf("architecture %q, uname says %q; spatec reads it as %q on %s", info.Architecture, machine, schema.ArchOf(info.Architecture), runtime.GOARCH)
	}
	// The engine counts the host's CPUs; this process may be pinned to fewer.
	if info.NCPU < runtime.NumCPU() {
		t.Errorf("NCPU %d, but this process alone can use %d", info.NCPU, runtime.NumCPU())
	}
	if info.CgroupVersion != "1" && info.CgroupVersion != "2" {
		t.Errorf("cgroup version %q, want 1 or 2", info.CgroupVersion)
	}
	if info.CgroupDriver != "cgroupfs" && info.CgroupDriver != "systemd" {
		t.Errorf("cgroup driver %q, want cgroupfs or systemd", info.CgroupDriver)
	}
	if info.EngineVersion == "" || info.APIVersion == "" || info.ClientAPIVersion == "" || info.MemTotal <= 0 {
		t.Errorf("missing host facts: %+v", info)
	}
}

// BenchmarkCreateStartInspect measures what applying one capped container
// costs the executor: create, start and inspect; the removal is not timed.
func BenchmarkCreateStartInspect(b *testing.B) {
	e := newEngine(b)
	ctx := testContext(b)
	run := scope(b, e)
	img := burntest.Image(b, e)
	i := 0
	for b.Loop() {
		i++
		created, err := e.Create(ctx, engine.ContainerSpec{
			Name: "spatec-bench-" + run + "-" + strconv.Itoa(i), Image: img,
			Labels:   map[string]string{testLabel: run},
			NanoCPUs: 5e8, Memory: 64 * mib, MemorySwap: 64 * mib,
		})
		if err != nil {
			b.Fatal(err)
		}
		if err := e.Start(ctx, created.ID); err != nil {
			b.Fatal(err)
		}
		if _, err := e.Inspect(ctx, created.ID); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := e.Remove(ctx, created.ID); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// TestPullByDigestFromARegistry resolves a tag to its manifest digest and
// pulls the image by that digest from a registry on the loopback, then
// runs it.
func TestPullByDigestFromARegistry(t *testing.T) {
	e := newEngine(t)
	ctx := context.Background()
	reg := testregistry.Start(t)
	tag, pushed := burntest.Publish(t, reg)
	got, err := e.RegistryDigest(ctx, tag)
	if err != nil || got != pushed {
		t.Fatalf("RegistryDigest(%s) = %s, %v; want %s", tag, got, err, pushed)
	}
	ref := reg.Host + "/spatec/burn@" + pushed
	t.Cleanup(func() { _ = e.RemoveImage(context.Background(), ref) })
	var last [2]int64
	if err := e.Pull(ctx, ref, func(done, total int64) { last = [2]int64{done, total} }); err != nil {
		t.Fatal(err)
	}
	if last[1] <= 0 || last[0] > last[1] {
		t.Errorf("progress ended at %d of %d bytes", last[0], last[1])
	}
	img, err := e.ImageDigest(ctx, ref)
	if err != nil || !slices.Contains(img.RepoDigests, ref) {
		t.Fatalf("after the pull: %+v, %v; want the image under %s", img, err, ref)
	}
	code, out, err := e.RunOnce(ctx, engine.ContainerSpec{Name: "spatec-pulled-" + uuid.NewString()[:8], Image: ref, Args: []string{"-version"}, NetworkMode: "none"}, nil)
	if err != nil || code != 0 || !strings.Contains(out, "burn ") {
		t.Fatalf("running the pulled image: %d, %v, %q", code, err, out)
	}
	if err := e.Pull(ctx, reg.Host+"/spatec/burn@sha256:"+strings.Repeat("0", 64), nil); err == nil {
		t.Error("pulling a digest the registry does not have succeeded")
	}
}
