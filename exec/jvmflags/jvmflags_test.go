package jvmflags

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"spatec.dev/spatec/internal/testenv"
)

// TestParseJDK17 reads files a JDK 17 wrote under Options, running
// -version with -Xms16m -XX:+UseG1GC and the GC log's option: -Xmx40g
// -XX:ObjectAlignmentInBytes=16 (compressed oops on, zero based, at shift
// 4) and -Xmx40g at the default alignment (beyond their reach: off). The
// figures are read off each file's table by hand.
func TestParseJDK17(t *testing.T) {
	for file, want := range map[string]Flags{
		"jdk17-align16-zero-based.vm.log": {ObjectAlignment: 16, CompressedOops: true, CompressedOopsOrigin: "ergonomic", HeapBaseMinAddress: 2 << 30, MaxHeapSize: 40 << 30, G1RegionSize: 32 << 20},
		"jdk17-disabled.vm.log":           {ObjectAlignment: 8, CompressedOops: false, CompressedOopsOrigin: "default", HeapBaseMinAddress: 2 << 30, MaxHeapSize: 40 << 30, G1RegionSize: 32 << 20},
	} {
		got, err := parseFile(filepath.Join("testdata", file))
		if err != nil || got != want {
			t.Errorf("%s: got %+v (%v)\nwant %+v", file, got, err, want)
		}
	}
}

// TestParseRefusesWhatHoldsNoTable: a JVM that stopped before printing its
// flags (here -Xms2g -Xmx1g: "Initial heap size set to a larger value than
// the maximum heap size"), or output the options did not write, is an error
// that quotes what the JVM said and names the options, not flags of zeros.
func TestParseRefusesWhatHoldsNoTable(t *testing.T) {
	_, err := parseFile(filepath.Join("testdata", "jdk17-refused.vm.log"))
	if err == nil || !strings.Contains(err.Error(), "it says: Error occurred during initialization of VM / Initial heap size set to a larger value than the maximum heap size") {
		t.Errorf("a JVM refused at start-up: got %v, want the JVM's words", err)
	}
	for _, text := range []string{"", "Picked up JAVA_TOOL_OPTIONS: -Xmx1g\n"} {
		_, err := Parse(strings.NewReader(text))
		if err == nil || !strings.Contains(err.Error(), "-XX:+UnlockDiagnosticVMOptions -XX:+LogVMOutput -XX:LogFile=/spatec-gc/vm.log -XX:+PrintFlagsFinal") {
			t.Errorf("%q: got %v, want an error naming the options", text, err)
		}
	}
	// A table without one of the flags C9 reads.
	_, err = Parse(strings.NewReader("     intx ObjectAlignmentInBytes                   = 8                              {product lp64_product} {default}\n"))
	if err == nil || !strings.Contains(err.Error(), `UseCompressedOops ""`) {
		t.Errorf("a table without UseCompressedOops: got %v", err)
	}
}

// TestFile finds the file among a plan's options, and says what it wanted
// when they do not have the JVM print its flags there.
func TestFile(t *testing.T) {
	opts := append([]string{"-XX:+UseG1GC"}, Options("/var/log/vm.log")...)
	if got, err := File(opts); err != nil || got != "/var/log/vm.log" {
		t.Errorf("File = %q, %v; want /var/log/vm.log", got, err)
	}
	for _, opts := range [][]string{nil, {"-XX:+PrintFlagsFinal"}, {"-XX:+LogVMOutput", "-XX:LogFile=/x"}} {
		if _, err := File(opts); err == nil || !strings.Contains(err.Error(), "do not have the JVM print its final flags to a file") {
			t.Errorf("File(%q): got %v", opts, err)
		}
	}
}

// TestFlagsFromALiveJVM starts the host's JVM with Options in
// JAVA_TOOL_OPTIONS, as the executor hands a JVM its plan's options, and
// reads the same flags from the file and from the console; and checks that
// a JVM refused at start-up still says why on its console, which
// DisplayVMOutput, left on, keeps.
func TestFlagsFromALiveJVM(t *testing.T) {
	testenv.Require(t, "a JDK (java)", func() error {
		_, err := exec.LookPath("java")
		return err
	})
	file := filepath.Join(t.TempDir(), "vm.log")
	cmd := exec.Command("java", "-Xms16m", "-Xmx2g", "-XX:ObjectAlignmentInBytes=16", "-version")
	cmd.Env = append(os.Environ(), "JAVA_TOOL_OPTIONS="+strings.Join(Options(file), " "))
	console, err := cmd.Output()
	if err != nil {
		t.Fatalf("java: %v\n%s", err, console)
	}
	fromFile, err := parseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	fromConsole, err := Parse(strings.NewReader(string(console)))
	if err != nil {
		t.Fatal(err)
	}
	want := Flags{ObjectAlignment: 16, CompressedOops: true, CompressedOopsOrigin: "ergonomic", HeapBaseMinAddress: 2 << 30, MaxHeapSize: 2 << 30, G1RegionSize: 1 << 20}
	if fromFile != want || fromConsole != want {
		t.Errorf("file %+v, console %+v; want %+v", fromFile, fromConsole, want)
	}

	cmd = exec.Command("java", "-Xms2g", "-Xmx1g", "-version")
	cmd.Env = append(os.Environ(), "JAVA_TOOL_OPTIONS="+strings.Join(Options(file), " "))
	console, err = cmd.Output()
	if err == nil || !strings.Contains(string(console), "Initial heap size set to a larger value than the maximum heap size") {
		t.Errorf("a JVM refused at start-up: %v, console %q; want its reason on the console", err, console)
	}
	if _, err := parseFile(file); err == nil || !strings.Contains(err.Error(), "Initial heap size set to a larger value") {
		t.Errorf("its file: %v, want the reason quoted", err)
	}
}

// parseFile parses the file at path.
func parseFile(path string) (Flags, error) {
	f, err := os.Open(path)
	if err != nil {
		return Flags{}, err
	}
	defer f.Close()
	return Parse(f)
}
