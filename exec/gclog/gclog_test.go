package gclog

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"spatec.dev/spatec/exec/jvmflags"
	"spatec.dev/spatec/internal/testenv"
	"spatec.dev/spatec/schema"
)

const mib = int64(1) << 20

// TestParseJDK17 reads logs a JDK 17 wrote under Option while running
// testdata/Churn.java with -Xms16m -Xmx64m, one per collector. The expected
// figures are read off each log by hand.
func TestParseJDK17(t *testing.T) {
	cases := []struct {
		file string
		want Heap
	}{
		// G1's last collection is the full one: 28M->25M(55M).
		{"jdk17-g1.log", Heap{Collector: "G1", ConfiguredBytes: 64 * mib, CommittedPeakBytes: 55 * mib, LivePeakBytes: 25 * mib, Collections: 13, CompressedOopsMode: "32-bit"}},
		// Parallel's highest occupancy follows a young collection that
		// promoted: 24M->26M(40M).
		{"jdk17-parallel.log", Heap{Collector: "Parallel", ConfiguredBytes: 64 * mib, CommittedPeakBytes: 40 * mib, LivePeakBytes: 26 * mib, Collections: 14, CompressedOopsMode: "32-bit"}},
		{"jdk17-serial.log", Heap{Collector: "Serial", ConfiguredBytes: 64 * mib, CommittedPeakBytes: 60 * mib, LivePeakBytes: 25 * mib, Collections: 36, CompressedOopsMode: "32-bit"}},
		// ZGC: the Live row of the System.gc() cycle, 25M, and Capacity
		// reaching the 64M maximum; the aborted cycle does not count. It
		// uses no compressed oops, and does not say so.
		{"jdk17-z.log", Heap{Collector: "The Z Garbage Collector", ConfiguredBytes: 64 * mib, CommittedPeakBytes: 64 * mib, LivePeakBytes: 25 * mib, Collections: 4}},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			got, err := Parse(f)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestParseRefusesOtherText checks that a log the option did not write (a
// JVM that ignored JAVA_TOOL_OPTIONS, an empty file) is an error that says
// what was expected, not a heap of zeros.
func TestParseRefusesOtherText(t *testing.T) {
	for _, text := range []string{"", "Picked up JAVA_TOOL_OPTIONS\nhello\n"} {
		_, err := Parse(strings.NewReader(text))
		if err == nil || !strings.Contains(err.Error(), "-Xlog:gc,gc+init,gc+heap,gc+heap+coops=debug:file=/spatec-gc/gc.log") {
			t.Errorf("%q: got %v, want an error naming the option", text, err)
		}
	}
}

// TestParseLiveJVM runs the host's JVM under each collector with Option in
// JAVA_TOOL_OPTIONS, as the executor starts JVM arms, and checks the
// figures against what the program is known to do: -Xmx64m configured, a
// live set of at least 24 MiB, committed between the two.
func TestParseLiveJVM(t *testing.T) {
	testenv.Require(t, "a JDK (java and javac)", func() error {
		if _, err := exec.LookPath("javac"); err != nil {
			return err
		}
		_, err := exec.LookPath("java")
		return err
	})
	classes := t.TempDir()
	if out, err := exec.Command("javac", "-d", classes, filepath.Join("testdata", "Churn.java")).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	for _, gc := range []string{"G1", "Parallel", "Serial", "Z"} {
		t.Run(gc, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "gc.log")
			cmd := exec.Command("java", "-cp", classes, "-Xms16m", "-Xmx64m", "-XX:+Use"+gc+"GC", "Churn")
			cmd.Env = append(os.Environ(), "JAVA_TOOL_OPTIONS="+Option(log))
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("java: %v\n%s", err, out)
			}
			f, err := os.Open(log)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			h, err := Parse(f)
			if err != nil {
				t.Fatal(err)
			}
			if h.ConfiguredBytes != 64*mib {
				t.Errorf("configured %d, want 64 MiB", h.ConfiguredBytes)
			}
			if h.Collections == 0 || h.LivePeakBytes < 24*mib || h.LivePeakBytes > h.CommittedPeakBytes || h.CommittedPeakBytes > h.ConfiguredBytes {
				t.Errorf("want 24 MiB ≤ live ≤ committed ≤ configured after some collections, got %+v", h)
			}
		})
	}
}

// TestFile finds the log file among JVM options, and says what it wanted
// when there is none.
func TestFile(t *testing.T) {
	if got, err := File("-XX:+UseZGC  " + Option("/var/log/gc.log") + " -Dx=y"); err != nil || got != "/var/log/gc.log" {
		t.Errorf("File = %q, %v; want /var/log/gc.log", got, err)
	}
	for _, opts := range []string{"", "-XX:+UseZGC", "-Xlog:gc"} {
		if _, err := File(opts); err == nil || !strings.Contains(err.Error(), "no -Xlog option that writes to a file") {
			t.Errorf("File(%q): got %v", opts, err)
		}
	}
}

// TestCompressedOopsModeJDK17 reads the mode from logs a JDK 17 wrote
// under Option (with -Xms16m -XX:+UseG1GC, running -version), one per mode
// HotSpot names: gc+init's summary, and gc+heap+coops' line where the mode
// is enabled, whose oop shift says nothing in 32-bit mode.
func TestCompressedOopsModeJDK17(t *testing.T) {
	for file, want := range map[string]string{
		"jdk17-oops-32-bit.log":            "32-bit",                 // -Xmx1g
		"jdk17-oops-zero-based.log":        "Zero based",             // -Xmx8g
		"jdk17-oops-zero-based-16.log":     "Zero based",             // -Xmx40g -XX:ObjectAlignmentInBytes=16
		"jdk17-oops-non-zero-disjoint.log": "Non-zero disjoint base", // -Xmx31g
		"jdk17-oops-non-zero.log":          "Non-zero based",         // -Xmx8g -XX:HeapBaseMinAddress=33g
		"jdk17-oops-disabled.log":          "Disabled",               // -Xmx40g
	} {
		f, err := os.Open(filepath.Join("testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		h, err := Parse(f)
		f.Close()
		if err != nil || h.CompressedOopsMode != want {
			t.Errorf("%s: mode %q (%v), want %q", file, h.CompressedOopsMode, err, want)
		}
	}
	// gc+heap+coops alone, as a log of that tag set would have it.
	h, err := Parse(strings.NewReader("[0.004s][debug][gc,heap,coops] Heap address: 0x0000000840400000, size: 8192 MB, Compressed Oops mode: Non-zero based: 0x0000000840000000, Oop shift amount: 3\n"))
	if err != nil || h.CompressedOopsMode != "Non-zero based" {
		t.Errorf("the coops line alone: mode %q (%v), want Non-zero based", h.CompressedOopsMode, err)
	}
}

// TestCompressedOopsFromALiveJVM asks the host's JDK, started with Option
// and the final flags' options (jvmflags.Options) as every JVM arm is, what
// it makes of heaps that take each compressed-oops mode at 8- and 16-byte
// alignment (the JVM only reserves the heap: 64 GiB needs no memory). Its
// GC log names the mode, its final flags the alignment, and the mode the
// plan declares for the heap (schema.JVM.CompressedOopsMode) is the JVM's
// wherever C9 admits the heap.
func TestCompressedOopsFromALiveJVM(t *testing.T) {
	testenv.Require(t, "a JDK (java)", func() error {
		_, err := exec.LookPath("java")
		return err
	})
	const gib = int64(1) << 30
	for _, c := range []struct {
		heap      int64  // -Xmx
		alignment int    // -XX:ObjectAlignmentInBytes
		base      int64  // -XX:HeapBaseMinAddress; 0 for the default, 2 GiB
		gc        string // as a plan names it (#JVM.gc); "" for G1
		want      string
	}{
		{heap: 1 * gib, alignment: 8, want: "32-bit"},
		{heap: 2 * gib, alignment: 8, want: "32-bit"},           // ends at 4 GiB
		{heap: 2*gib + 1<<20, alignment: 8, want: "Zero based"}, // a MiB beyond
		{heap: 8 * gib, alignment: 8, want: "Zero based"},
		{heap: 30 * gib, alignment: 8, want: "Zero based"}, // C9's ceiling at 8
		{heap: 31 * gib, alignment: 8, want: "Non-zero disjoint base"},
		{heap: 8 * gib, alignment: 8, base: 33 * gib, want: "Non-zero based"},
		{heap: 40 * gib, alignment: 8, want: "Disabled"},
		{heap: 1 * gib, alignment: 8, gc: "ZGC", want: "Disabled"},
		{heap: 1 * gib, alignment: 16, want: "32-bit"},
		{heap: 40 * gib, alignment: 16, want: "Zero based"},
		{heap: 62 * gib, alignment: 16, want: "Zero based"}, // C9's ceiling at 16
		{heap: 63 * gib, alignment: 16, want: "Non-zero disjoint base"},
		{heap: 64 * gib, alignment: 16, want: "Disabled"},
	} {
		gc := cmp.Or(c.gc, "G1")
		opts := []string{"-Xms16m", fmt.Sprintf("-Xmx%dm", c.heap>>20), "-XX:+Use" + strings.TrimSuffix(gc, "GC") + "GC"}
		if c.alignment != 8 {
			opts = append(opts, fmt.Sprintf("-XX:ObjectAlignmentInBytes=%d", c.alignment))
		}
		base := cmp.Or(c.base, 2*gib)
		if c.base != 0 {
			opts = append(opts, fmt.Sprintf("-XX:HeapBaseMinAddress=%dm", c.base>>20))
		}
		dir := t.TempDir()
		log, vmLog := filepath.Join(dir, "gc.log"), filepath.Join(dir, "vm.log")
		args := append(append(append(opts, Option(log)), jvmflags.Options(vmLog)...), "-version")
		if out, err := exec.Command("java", args...).CombinedOutput(); err != nil {
			t.Fatalf("java %v: %v\n%s", opts, err, out)
		}
		// ZGC logs nothing of compressed oops: its flags say it uses none.
		logged := c.want
		if gc == "ZGC" {
			logged = ""
		}
		h, err := parseFile(log, Parse)
		if err != nil || h.CompressedOopsMode != logged {
			t.Errorf("java %v: GC log's compressed-oops mode %q (%v), want %q", opts, h.CompressedOopsMode, err, logged)
		}
		f, err := parseFile(vmLog, jvmflags.Parse)
		if err != nil || f.ObjectAlignment != c.alignment || f.CompressedOops != (c.want != "Disabled") || f.MaxHeapSize < c.heap || f.HeapBaseMinAddress != base {
			t.Errorf("java %v: final flags %+v (%v); want alignment %d, compressed oops %v, max heap %d, heap base %d",
				opts, f, err, c.alignment, c.want != "Disabled", c.heap, base)
		}
		plan := &schema.JVM{Heap: c.heap, ObjectAlignment: c.alignment, HeapBaseMinAddress: base,
			Ceiling: 32<<30*int64(c.alignment)/8 - base, GC: gc}
		declared, admitted := plan.CompressedOopsMode(), c.heap <= plan.Ceiling
		if admitted && declared != c.want || !admitted && declared != "" {
			t.Errorf("java %v: the plan declares mode %q for the heap (C9 admits it: %v); the JVM takes %q", opts, declared, admitted, c.want)
		}
	}
}

// parseFile parses the file at path with parse.
func parseFile[T any](path string, parse func(io.Reader) (T, error)) (T, error) {
	f, err := os.Open(path)
	if err != nil {
		var zero T
		return zero, err
	}
	defer f.Close()
	return parse(f)
}
