// Package jvmflags reads a JVM's final flags, as -XX:+PrintFlagsFinal prints
// them, for what C9 reasons with: the object alignment the JVM ran with and
// whether it used compressed oops, in the JVM's own word rather than
// inferred from its GC log.
//
// Every JVM plan carries Options(Path) among its JVM options (the schema's
// #JVM.flagsLog), so the JVM prints the table at start-up, once its heap is
// reserved, and copies its console output into a file: HotSpot's XML log,
// whose <tty> element holds the console text, the table among it. Parse
// reads the table out of that file, or out of the console text itself.
package jvmflags

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Path is where, inside the container, the JVM copies its console output:
// beside the GC log (gclog.Path), in the directory the executor makes open
// to every user.
const Path = "/spatec-gc/vm.log"

// Options are the JVM options that write the file Parse reads to path.
// LogVMOutput is a diagnostic option, so the unlocking comes first; the
// JVM keeps printing to its console as well (DisplayVMOutput), which is
// where its start-up errors must still go. The schema's #JVM.flagsLog is
// Options(Path).
func Options(path string) []string {
	return []string{"-XX:+UnlockDiagnosticVMOptions", "-XX:+LogVMOutput", "-XX:LogFile=" + path, "-XX:+PrintFlagsFinal"}
}

// File returns the file the -XX:LogFile option among opts names, when opts
// also have the JVM print its flags and copy its output there.
func File(opts []string) (string, error) {
	var file string
	for _, o := range opts {
		if f, ok := strings.CutPrefix(o, "-XX:LogFile="); ok {
			file = f // the JVM takes the last
		}
	}
	if file == "" || !slices.Contains(opts, "-XX:+LogVMOutput") || !slices.Contains(opts, "-XX:+PrintFlagsFinal") {
		return "", fmt.Errorf("%q do not have the JVM print its final flags to a file; want %s", strings.Join(opts, " "), strings.Join(Options(Path), " "))
	}
	return file, nil
}

// Flags are what C9 reads of a JVM's final flags.
type Flags struct {
	// ObjectAlignment is ObjectAlignmentInBytes: the alignment of every
	// object, which sets how far compressed oops reach (32 GiB per 8
	// bytes).
	ObjectAlignment int
	// CompressedOops is UseCompressedOops: the JVM turns it off itself for
	// a heap beyond their reach, and ZGC never uses them.
	CompressedOops bool
	// CompressedOopsOrigin is where UseCompressedOops' value came from, as
	// the table says: "default", "ergonomic", "command line"…
	CompressedOopsOrigin string
	// HeapBaseMinAddress is the lowest address the JVM places the heap at.
	HeapBaseMinAddress int64
	// MaxHeapSize is the maximum heap, as the JVM rounded it.
	MaxHeapSize int64
	// G1RegionSize is G1HeapRegionSize: G1 rounds its heap up to a whole
	// number of regions (0 under another collector).
	G1RegionSize int64
}

// HeapAlignment is what the JVM rounds a maximum heap up to: the reach of
// a page of its card table (512-byte cards on 4 KiB pages, 2 MiB), or G1's
// region where that is larger.
func (f Flags) HeapAlignment() int64 { return max(2<<20, f.G1RegionSize) }

// flag is one line of the table: `     intx ObjectAlignmentInBytes    = 8
// {product lp64_product} {default}` (JDK 9 and later; JDK 8 has no origin
// and marks a value set on the command line with :=).
var flag = regexp.MustCompile(`^\s*(\S+)\s+(\w+)\s+:?=\s*(.*?)\s+\{[^}]*\}(?:\s+\{([^}]*)\})?\s*$`)

// Parse reads the final flags out of a file the JVM wrote under Options, or
// out of its console output. It fails when the text holds no table (the
// JVM did not start, or was not given Options) or the table lacks one of
// the flags Flags holds.
func Parse(r io.Reader) (Flags, error) {
	type entry struct{ value, origin string }
	table := map[string]entry{}
	var other []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		l := strings.TrimRight(sc.Text(), "\r")
		if m := flag.FindStringSubmatch(l); m != nil {
			// A second table (the option given twice) is the same table.
			table[m[2]] = entry{m[3], m[4]}
			continue
		}
		// What the JVM said instead, for the error: its console text,
		// which in the file is what follows <tty>.
		t := strings.TrimSpace(l)
		if t == "<tty>" {
			other = nil
		}
		if t != "" && !strings.HasPrefix(t, "<") && len(other) < 3 {
			other = append(other, t)
		}
	}
	if err := sc.Err(); err != nil {
		return Flags{}, fmt.Errorf("reading the JVM's final flags: %w", err)
	}
	if len(table) == 0 {
		said := ""
		if len(other) > 0 {
			said = fmt.Sprintf(" (it says: %s)", strings.Join(other, " / "))
		}
		return Flags{}, fmt.Errorf("the JVM's output holds no table of final flags%s; was it started with %s?", said, strings.Join(Options(Path), " "))
	}
	var f Flags
	var errs []string
	number := func(name string) int64 {
		n, err := strconv.ParseInt(table[name].value, 10, 64)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s %q", name, table[name].value))
		}
		return n
	}
	f.ObjectAlignment = int(number("ObjectAlignmentInBytes"))
	f.HeapBaseMinAddress = number("HeapBaseMinAddress")
	f.MaxHeapSize = number("MaxHeapSize")
	if _, ok := table["G1HeapRegionSize"]; ok {
		f.G1RegionSize = number("G1HeapRegionSize")
	}
	switch oops := table["UseCompressedOops"]; oops.value {
	case "true", "false":
		f.CompressedOops, f.CompressedOopsOrigin = oops.value == "true", oops.origin
	default:
		errs = append(errs, fmt.Sprintf("UseCompressedOops %q", oops.value))
	}
	if len(errs) > 0 {
		return f, fmt.Errorf("the JVM's final flags lack a value for %s", strings.Join(errs, ", "))
	}
	return f, nil
}
