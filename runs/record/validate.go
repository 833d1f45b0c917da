package record

import (
	"cmp"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
)

// Summary counts what Validate walked.
type Summary struct {
	Files   int
	Records int
	// Foreign counts the records read in another tool's format, and
	// ForeignFiles the files that held them.
	Foreign, ForeignFiles int
}

// Foreign reads a results file written by another tool, when it is one:
// handled says whether it was, records how many records it held, problems
// each defect at its file and line. Validate hands it every file first.
type Foreign func(path string) (records int, problems []Problem, handled bool)

// Validate walks the results tree at root and returns every problem it finds,
// each located by file and line, sorted by file then line. Nil means the tree
// is clean.
//
// It checks each file's place in the tree (<env>/<entrant>/<YYYY-MM>.jsonl),
// each line (parseable, complete, a known schema version, no unknown fields,
// a known status), each record (Record.Check: provenance, units, run id,
// repetition numbers), that a record's environment and entrant match its
// directories, that a record's series file is there with the digest it
// names, that the reference harness's window it carries is the one its
// series and instants give, and that no run id appears twice anywhere in
// the tree.
func Validate(root string) []Problem {
	_, problems := ValidateTree(root)
	return problems
}

// ValidateTree is Validate, also returning how many files and records it
// read, for a summary line.
func ValidateTree(root string) (Summary, []Problem) {
	return ValidateTreeWith(root, nil)
}

// ValidateTreeWith is ValidateTree, reading the files foreign handles in
// their own format (their records count in Summary.Foreign).
func ValidateTreeWith(root string, foreign Foreign) (Summary, []Problem) {
	var sum Summary
	var problems []Problem

	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			problems = append(problems, Problem{File: path, Message: fmt.Sprintf("cannot walk: %v", err)})
			if d != nil && d.IsDir() && path != root {
				return fs.SkipDir
			}
			return nil
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".jsonl") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		problems = append(problems, Problem{File: root, Message: fmt.Sprintf("cannot walk: %v", err)})
	}
	slices.Sort(files)

	// run id -> where it was first seen. Tree-wide: a record copied into a
	// second file is as much a duplicate as one written twice into one.
	seen := map[string]string{}
	for _, path := range files {
		sum.Files++
		if foreign != nil {
			if n, ps, ok := foreign(path); ok {
				sum.Foreign += n
				sum.ForeignFiles++
				problems = append(problems, ps...)
				continue
			}
		}
		opts := ScanOptions{Strict: true}
		if env, entrant, ok := layoutUnder(root, path); ok {
			opts.Env, opts.Entrant = env, entrant
		} else {
			problems = append(problems, Problem{File: path, Message: fmt.Sprintf(
				"not where a results file belongs: expected %s, so the file says which environment and entrant it holds",
				filepath.Join(root, "<env>", "<entrant>", "<YYYY-MM>.jsonl"))})
		}
		problems = append(problems, ScanFile(path, opts, func(line int, rec *Record) {
			sum.Records++
			here := fmt.Sprintf("%s:%d", path, line)
			for _, msg := range rec.Check() {
				problems = append(problems, Problem{File: path, Line: line, Message: fmt.Sprintf("run %s: %s", rec.RunID, msg)})
			}
			if rec.Series != nil {
				s, err := ReadSeries(path, rec.RunID, *rec.Series)
				if err != nil {
					problems = append(problems, Problem{File: path, Line: line, Message: fmt.Sprintf("run %s: %v; the record stands without its series", rec.RunID, err)})
				} else if msg := rec.harnessWindowAgrees(s); msg != "" {
					problems = append(problems, Problem{File: path, Line: line, Message: fmt.Sprintf("run %s: %s", rec.RunID, msg)})
				}
			}
			if rec.RunID == "" {
				return
			}
			if first, dup := seen[rec.RunID]; dup {
				problems = append(problems, Problem{File: path, Line: line, Message: fmt.Sprintf(
					"duplicate run_id %s: also at %s. A run id is generated once per run, so one of the two lines was copied; remove the copy",
					rec.RunID, first)})
				return
			}
			seen[rec.RunID] = here
		})...)
	}

	slices.SortStableFunc(problems, func(a, b Problem) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line))
	})
	return sum, problems
}

// layoutUnder is Layout, also requiring the file to sit exactly two
// directories below root.
func layoutUnder(root, path string) (env, entrant string, ok bool) {
	rel, err := filepath.Rel(root, path)
	if err != nil || len(strings.Split(filepath.ToSlash(rel), "/")) != 3 {
		return "", "", false
	}
	return Layout(path)
}

// harnessWindowAgrees says how the reference harness's window a record
// carries differs from the one its series and instants give, or "" when
// they agree (or the record carries none): the window is derived, so
// anyone can derive it again.
func (r *Record) harnessWindowAgrees(s *Series) string {
	h := r.Run.Window.Harness
	if h == nil {
		return ""
	}
	got, err := r.HarnessSpanFrom(s)
	switch {
	case err != nil:
		return fmt.Sprintf("run.window.harness cannot be derived again from the record and its series: %v", err)
	case !got.OpenedAt.Equal(h.OpenedAt) || !got.ClosedAt.Equal(h.ClosedAt) || got.DurationS != h.DurationS || got.Rows != h.Rows:
		return fmt.Sprintf("run.window.harness is %v to %v over %d rows, but the record's start instants and its series give %v to %v over %d rows",
			h.OpenedAt, h.ClosedAt, h.Rows, got.OpenedAt, got.ClosedAt, got.Rows)
	}
	return ""
}
