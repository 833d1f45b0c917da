package gclog

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"spatec.dev/spatec/internal/testenv"
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
		{"jdk17-g1.log", Heap{Collector: "G1", ConfiguredBytes: 64 * mib, CommittedPeakBytes: 55 * mib, LivePeakBytes: 25 * mib, Collections: 13, CompressedOops: "Enabled (32-bit)"}},
		// Parallel's highest occupancy follows a young collection that
		// promoted: 24M->26M(40M).
		{"jdk17-parallel.log", Heap{Collector: "Parallel", ConfiguredBytes: 64 * mib, CommittedPeakBytes: 40 * mib, LivePeakBytes: 26 * mib, Collections: 14, CompressedOops: "Enabled (32-bit)"}},
		{"jdk17-serial.log", Heap{Collector: "Serial", ConfiguredBytes: 64 * mib, CommittedPeakBytes: 60 * mib, LivePeakBytes: 25 * mib, Collections: 36, CompressedOops: "Enabled (32-bit)"}},
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

// TestCompressedOopsFromALiveJVM: the JVM's own verdict on compressed oops,
// for a heap above the default ceiling without and with the alignment that
// raises it (the JVM only reserves the heap, so 40 GiB needs no memory).
func TestCompressedOopsFromALiveJVM(t *testing.T) {
	testenv.Require(t, "a JDK (java)", func() error {
		_, err := exec.LookPath("java")
		return err
	})
	for _, c := range []struct {
		opts      []string
		want      string
		alignment int // 0: the log cannot say (32-bit mode, oops off)
	}{
		{[]string{"-Xmx64m"}, "Enabled (32-bit)", 0},
		{[]string{"-Xmx8g"}, "Enabled (Zero based)", 8},
		{[]string{"-Xmx40g"}, "Disabled", 0},
		{[]string{"-Xmx40g", "-XX:ObjectAlignmentInBytes=16"}, "Enabled (Zero based)", 16},
	} {
		log := filepath.Join(t.TempDir(), "gc.log")
		cmd := exec.Command("java", append(append(c.opts, "-XX:+UseG1GC", Option(log)), "-version")...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("java %v: %v\n%s", c.opts, err, out)
		}
		f, err := os.Open(log)
		if err != nil {
			t.Fatal(err)
		}
		h, err := Parse(f)
		f.Close()
		if err != nil || h.CompressedOops != c.want || h.ObjectAlignment != c.alignment {
			t.Errorf("java %v: compressed oops %q, object alignment %d (%v), want %q and %d", c.opts, h.CompressedOops, h.ObjectAlignment, err, c.want, c.alignment)
		}
	}
}
