package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"spatec.dev/spatec/exec/gclog"
	"spatec.dev/spatec/exec/jvmflags"
)

func TestParseSize(t *testing.T) {
	good := map[string]int64{"0": 0, "512": 512, "7B": 7, "64KiB": 64 << 10, "64MiB": 64 << 20, "2GiB": 2 << 30}
	for in, want := range good {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MiB", "-1MiB", "64MB", "1.5GiB", "9999999999GiB"} {
		if _, err := parseSize(in); err == nil || !strings.Contains(err.Error(), "want a non-negative integer") {
			t.Errorf("parseSize(%q) = %v, want a refusal saying what is allowed", in, err)
		}
	}
}

func TestRunVersion(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"-version"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
	if got := out.String(); got != "burn "+Version+"\n" {
		t.Errorf("-version printed %q", got)
	}
}

func TestRunExitCodeAndLine(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run([]string{"-exit", "3", "-anon", "1MiB", "-shm", "1MiB"}, &out, &errOut)
	if code != 3 {
		t.Errorf("exit %d, want 3", code)
	}
	if !strings.Contains(out.String(), "burn ready: cpu=0 anon=1048576 shm=1048576") {
		t.Errorf("stdout %q lacks the ready line", out.String())
	}
	if errOut.String() != "burn: exiting with code 3 as asked\n" {
		t.Errorf("stderr %q", errOut.String())
	}
}

func TestRunRefusesBadFlags(t *testing.T) {
	cases := map[string][]string{
		"-anon":               {"-anon", "lots"},
		"-cpu":                {"-cpu", "-1"},
		"an exit code is 0":   {"-exit", "300"},
		"unexpected argument": {"extra"},
	}
	for want, args := range cases {
		var out, errOut bytes.Buffer
		if code := run(args, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), want) {
			t.Errorf("burn %q: exit %d, stderr %q; want 2 and %q", args, code, errOut.String(), want)
		}
	}
}

// TestMemoryIsResident runs the real binary and reads the kernel's own
// accounting of its memory: the anonymous and the shared memory must be
// resident once burn says it is ready.
func TestMemoryIsResident(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "burn")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building burn: %v\n%s", err, msg)
	}
	cmd := exec.Command(bin, "-anon", "16MiB", "-shm", "8MiB")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "burn ready") {
		t.Fatalf("first line %q, %v; want the ready line", line, err)
	}
	status, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	kib := func(field string) int64 {
		for l := range strings.Lines(string(status)) {
			if rest, ok := strings.CutPrefix(l, field+":"); ok {
				n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
				return n
			}
		}
		t.Fatalf("no %s in /proc/<pid>/status", field)
		return 0
	}
	if anon := kib("RssAnon"); anon < 16<<10 {
		t.Errorf("RssAnon %d KiB, want at least 16 MiB", anon)
	}
	if shm := kib("RssShmem"); shm < 8<<10 {
		t.Errorf("RssShmem %d KiB, want at least 8 MiB", shm)
	}
}

// TestWriteGCLog: -gclog writes where the executor's options say, a log and
// final flags the executor's parsers read as the figures the exec tests
// expect.
func TestWriteGCLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "gc.log")
	if err := writeGCLog("-XX:+UseG1GC " + gclog.Option(path)); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, err := gclog.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	if h.ConfiguredBytes != 512<<20 || h.CommittedPeakBytes != 300<<20 || h.LivePeakBytes != 64<<20 || h.CompressedOopsMode != "32-bit" {
		t.Errorf("parsed %+v, want 512 MiB configured, 300 MiB committed, 64 MiB live, compressed oops 32-bit", h)
	}
	// With the final flags' options, their file too.
	flagsPath := filepath.Join(t.TempDir(), "sub", "vm.log")
	if err := writeGCLog(gclog.Option(path) + " " + strings.Join(jvmflags.Options(flagsPath), " ")); err != nil {
		t.Fatal(err)
	}
	ff, err := os.Open(flagsPath)
	if err != nil {
		t.Fatal(err)
	}
	defer ff.Close()
	flags, err := jvmflags.Parse(ff)
	if want := (jvmflags.Flags{ObjectAlignment: 8, CompressedOops: true, CompressedOopsOrigin: "ergonomic", HeapBaseMinAddress: 2 << 30, MaxHeapSize: 512 << 20}); err != nil || flags != want {
		t.Errorf("final flags %+v (%v), want %+v", flags, err, want)
	}
	if err := writeGCLog("-XX:+UseG1GC"); err == nil || !strings.Contains(err.Error(), "has no -Xlog option that writes to a file") {
		t.Errorf("no -Xlog: got %v", err)
	}
}
