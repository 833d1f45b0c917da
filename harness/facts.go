// Package harness holds what spatec knows of the public reference harness
// (spate-etl/benchmark) as data: every setting its files give an arm, read
// by machine from a checkout at one commit (Extract) and committed as
// facts.tsv, and the account spatec gives of each of them against its own
// plans on the harness's host (Account), from which docs/harness.md is
// written. A setting the harness has and spatec's plan lacks, or the other
// way round, is found by a test, not by a reader.
package harness

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// Fact is one setting of the harness: the arm it configures ("" for the
// workload, the environment and the toolchain), the file it is written in
// (a path in the harness's repository), its key in that file's own terms
// (flattened: YAML and TOML paths dotted, a Dockerfile's ENV as ENV.NAME)
// and its value as written.
type Fact struct {
	Arm, File, Key, Value string
}

// ID names a fact within its arm: file and key.
func (f Fact) ID() string { return f.File + " " + f.Key }

// Facts is the harness's settings at one commit.
type Facts struct {
	// Commit is the harness's commit the facts were read at.
	Commit string
	List   []Fact
}

// sortFacts orders facts by arm, file and key, the order facts.tsv keeps.
func sortFacts(fs []Fact) {
	slices.SortFunc(fs, func(a, b Fact) int {
		return cmp.Or(cmp.Compare(a.Arm, b.Arm), cmp.Compare(a.File, b.File), cmp.Compare(a.Key, b.Key))
	})
}

// escape keeps a value on one tab-separated line.
var escaper = strings.NewReplacer(`\`, `\\`, "\t", `\t`, "\n", `\n`)

func unescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
			switch s[i] {
			case 't':
				b.WriteByte('\t')
			case 'n':
				b.WriteByte('\n')
			default:
				b.WriteByte(s[i])
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// header starts facts.tsv; the commit follows it.
const header = "# The public harness's settings, read by `go run ./cmd/spatec-harness-facts` at commit "

// Write writes the facts as facts.tsv: a header naming the commit, then a
// line a fact, arm, file, key and value separated by tabs.
func (f Facts) Write(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "%s%s\n", header, f.Commit)
	fmt.Fprintln(bw, "# arm\tfile\tkey\tvalue")
	for _, x := range f.List {
		fmt.Fprintf(bw, "%s\t%s\t%s\t%s\n", escaper.Replace(x.Arm), escaper.Replace(x.File), escaper.Replace(x.Key), escaper.Replace(x.Value))
	}
	return bw.Flush()
}

// ReadFacts reads a facts.tsv that Write wrote.
func ReadFacts(path string) (Facts, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Facts{}, fmt.Errorf("reading the harness's facts: %w", err)
	}
	var f Facts
	for n, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if c, ok := strings.CutPrefix(line, header); ok {
			f.Commit = c
			continue
		}
		if strings.HasPrefix(line, "#") {
			continue
		}
		cells := strings.Split(line, "\t")
		if len(cells) != 4 {
			return Facts{}, fmt.Errorf("%s:%d: %d cells; a fact has 4 (arm, file, key, value)", path, n+1, len(cells))
		}
		f.List = append(f.List, Fact{unescape(cells[0]), unescape(cells[1]), unescape(cells[2]), unescape(cells[3])})
	}
	if f.Commit == "" {
		return Facts{}, fmt.Errorf("%s: no line %q names the harness's commit", path, header)
	}
	return f, nil
}
