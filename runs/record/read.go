package record

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"

	gojson "github.com/goccy/go-json"
	"golang.org/x/sys/unix"
)

// MaxLineBytes bounds one line of a results file. Records are a few KiB; a
// longer line is a damaged file, and is reported as such.
const MaxLineBytes = 64 << 20

// Problem is one defect in a results file, with where it is.
type Problem struct {
	File string `json:"file"`
	// Line is 1-based; 0 when the problem concerns the whole file.
	Line    int    `json:"line,omitempty"`
	Message string `json:"message"`
}

// String renders the problem as file:line: message, the form editors and
// terminals turn into a link.
func (p Problem) String() string {
	if p.Line == 0 {
		return fmt.Sprintf("%s: %s", p.File, p.Message)
	}
	return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Message)
}

// ScanOptions says how strictly ScanFile reads.
type ScanOptions struct {
	// Strict also reports fields the schema does not know, which a newer
	// or hand-edited writer may have added.
	Strict bool
	// Env, when set, is the environment every record must belong to; a
	// record of another environment is reported and not passed on.
	Env string
	// Entrant, when set, is the entrant every record must belong to.
	Entrant string
}

// ScanFile streams the records of one results file in order, calling fn for
// each record that can be used, and returns a Problem for every line that
// cannot: unparseable or truncated JSON, an unknown schema version, an
// unknown status, a record of another environment or entrant than opts
// names. Nothing is dropped silently: every non-blank line either reaches fn
// or yields a Problem.
//
// Lines are decoded on all CPUs, since decoding is nearly all of the cost of
// a large log, but fn is called on the caller's goroutine, in file order.
// The file is read under a shared flock, so a record being appended is
// either seen whole or not at all.
func ScanFile(path string, opts ScanOptions, fn func(line int, rec *Record)) []Problem {
	f, err := os.Open(path)
	if err != nil {
		return []Problem{{File: path, Message: fmt.Sprintf("cannot read the file: %v", err)}}
	}
	defer f.Close()
	if err := flock(f, unix.LOCK_SH); err != nil {
		return []Problem{{File: path, Message: fmt.Sprintf("cannot lock the file for reading: %v", err)}}
	}

	workers := runtime.GOMAXPROCS(0)
	jobs := make(chan *batch, workers)
	inOrder := make(chan *batch, 2*workers)
	var tail Problem // set by the reader before it closes inOrder
	go func() {
		defer close(jobs)
		defer close(inOrder)
		tail = readBatches(f, func(b *batch) {
			inOrder <- b
			jobs <- b
		})
	}()
	for range workers {
		go func() {
			for b := range jobs {
				b.decode(opts)
				close(b.done)
			}
		}()
	}

	// Should fn panic, let the reader and the workers run to completion
	// rather than block forever on a channel nobody reads.
	defer func() {
		for range inOrder {
		}
	}()
	var problems []Problem
	for b := range inOrder {
		<-b.done
		for _, r := range b.results {
			for _, msg := range r.problems {
				problems = append(problems, Problem{File: path, Line: r.line, Message: msg})
			}
			if r.rec != nil {
				fn(r.line, r.rec)
			}
		}
	}
	if tail.Message != "" {
		tail.File = path
		problems = append(problems, tail)
	}
	return problems
}

// batchLines is how many lines travel to a decoding worker at a time: enough
// to make the hand-off cheap, few enough to keep every CPU busy.
const batchLines = 256

// batch is a run of consecutive lines and, once done is closed, what each
// of them held.
type batch struct {
	first        int      // line number of lines[0]
	lines        [][]byte // the raw lines, owned by the batch
	unterminated bool     // the last line ended the file without a newline
	results      []lineResult
	done         chan struct{}
}

type lineResult struct {
	line     int
	rec      *Record  // nil when the line cannot be used
	problems []string // what is wrong with it, if anything
}

// readBatches splits the file into batches of lines, handing each to emit,
// and returns the problem that stopped reading early, if any.
func readBatches(f *os.File, emit func(*batch)) Problem {
	// Whether the token just returned was the file's last bytes without a
	// closing newline: the mark of a write that did not finish.
	unterminated := false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 256<<10), MaxLineBytes)
	sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		adv, tok, err := bufio.ScanLines(data, atEOF)
		unterminated = atEOF && tok != nil && adv == len(data) && data[len(data)-1] != '\n'
		return adv, tok, err
	})

	line := 0
	b := &batch{first: 1, done: make(chan struct{})}
	for sc.Scan() {
		line++
		b.lines = append(b.lines, bytes.Clone(sc.Bytes()))
		b.unterminated = unterminated
		if len(b.lines) == batchLines {
			emit(b)
			b = &batch{first: line + 1, done: make(chan struct{})}
		}
	}
	if len(b.lines) > 0 {
		emit(b)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return Problem{Line: line + 1, Message: fmt.Sprintf("line longer than %d MiB: the file is damaged; reading stopped here and the rest of the file was not read", MaxLineBytes>>20)}
		}
		return Problem{Line: line + 1, Message: fmt.Sprintf("reading stopped: %v; the rest of the file was not read", err)}
	}
	return Problem{}
}

func (b *batch) decode(opts ScanOptions) {
	b.results = make([]lineResult, 0, len(b.lines))
	for i, raw := range b.lines {
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		last := i == len(b.lines)-1 && b.unterminated
		rec, problems := decodeLine(raw, last, opts)
		b.results = append(b.results, lineResult{line: b.first + i, rec: rec, problems: problems})
	}
	b.lines = nil
}

// decodeLine decides what one non-blank line holds: a usable record, or the
// reasons it cannot be used. unterminated says the line ended the file
// without a newline.
func decodeLine(raw []byte, unterminated bool, opts ScanOptions) (*Record, []string) {
	var notes []string
	fail := func(format string, args ...any) (*Record, []string) {
		return nil, append(notes, fmt.Sprintf(format, args...))
	}
	rec := &Record{}
	if err := decode(raw, rec); err != nil {
		switch schema, ok := schemaOf(raw); {
		case truncated(raw):
			why := "the line ends in the middle of a JSON value"
			if unterminated {
				why = "the last line has no newline and ends in the middle of a JSON value"
			}
			return fail("truncated record: %s, so a write was interrupted. Remove the partial line; the run it belonged to is not recorded", why)
		case ok && schema != SchemaV1:
			return fail("unknown schema version %q; this spatec reads %q. Read it with the spatec that wrote it", schema, SchemaV1)
		default:
			return fail("not a valid record: %v", err)
		}
	}
	if rec.Schema != SchemaV1 {
		if rec.Schema == "" {
			return fail("no schema field: not a spatec record (expected \"schema\": %q)", SchemaV1)
		}
		return fail("unknown schema version %q; this spatec reads %q. Read it with the spatec that wrote it", rec.Schema, SchemaV1)
	}
	if opts.Strict {
		if err := decodeStrict(raw); err != nil {
			notes = append(notes, fmt.Sprintf("run %s: %v; the schema %s does not have it", rec.RunID, err, SchemaV1))
		}
	}
	if !rec.Status.Known() {
		return fail("run %s: unknown status %q (known: %s); the record cannot be ranked", rec.RunID, rec.Status, statusList())
	}
	if opts.Env != "" && rec.Run.Env != opts.Env {
		return fail("run %s belongs to environment %q, not %q; records of different environments are never compared. Move it to results/%s/",
			rec.RunID, rec.Run.Env, opts.Env, rec.Run.Env)
	}
	if opts.Entrant != "" && rec.SUT.Entrant != opts.Entrant {
		return fail("run %s is of entrant %q, but the file is under %q", rec.RunID, rec.SUT.Entrant, opts.Entrant)
	}
	return rec, notes
}

// decode parses one line into rec.
//
// encoding/json decodes a record of a few KiB at roughly 50 µs, which makes
// a report over 100k records take seconds; go-json does it about four times
// faster. It only handles the common case, though: a line it rejects (or
// chokes on) is decoded again by encoding/json, whose verdict and message are
// the ones reported, so a damaged line gets the same diagnosis either way.
func decode(raw []byte, rec *Record) error {
	// Sized for a typical record, so the decoder does not grow it.
	rec.Metrics = make(map[string]Metric, 32)
	if fastDecode(raw, rec) == nil {
		return nil
	}
	*rec = Record{}
	return json.Unmarshal(raw, rec)
}

func fastDecode(raw []byte, rec *Record) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("go-json panicked: %v", r)
		}
	}()
	return gojson.Unmarshal(raw, rec)
}

// truncated reports whether raw is the beginning of a JSON value that ends
// before the value does, as an interrupted write leaves it.
func truncated(raw []byte) bool {
	var v any
	err := json.NewDecoder(bytes.NewReader(raw)).Decode(&v)
	return errors.Is(err, io.ErrUnexpectedEOF)
}

func schemaOf(raw []byte) (string, bool) {
	var probe struct {
		Schema string `json:"schema"`
	}
	if json.Unmarshal(raw, &probe) != nil || probe.Schema == "" {
		return "", false
	}
	return probe.Schema, true
}

func decodeStrict(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var rec Record
	return dec.Decode(&rec)
}

var monthFile = regexp.MustCompile(`^\d{4}-\d{2}\.jsonl$`)

// Layout returns the environment and entrant a results file belongs to by
// its place in the tree, <env>/<entrant>/<YYYY-MM>.jsonl, and false for a
// file that does not follow that layout.
func Layout(path string) (env, entrant string, ok bool) {
	if !monthFile.MatchString(filepath.Base(path)) {
		return "", "", false
	}
	entrantDir := filepath.Dir(path)
	envDir := filepath.Dir(entrantDir)
	env, entrant = filepath.Base(envDir), filepath.Base(entrantDir)
	if plainName(env) != nil || plainName(entrant) != nil {
		return "", "", false
	}
	return env, entrant, true
}
