package chdb

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Options say how a session's engine starts.
type Options struct {
	// Config is the text of a ClickHouse configuration file (XML) the
	// engine starts with, for what only configuration declares (a
	// cluster); "" starts it without one.
	Config string
}

// Session is one chDB process holding one fresh session: its databases
// live in a directory of their own, removed by Close. Statements run one
// after another, in the order they are sent.
type Session struct {
	// Version is the engine's version(), e.g. "26.9.2.1".
	Version string

	dir    string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr *tail
	ran    []Ran
}

// Ran is a statement the session ran, and its error if it failed.
type Ran struct {
	Statement string
	Err       *Error
}

// String is the statement on one line, its inline data (after FORMAT)
// counted rather than shown, and how it failed if it did.
func (r Ran) String() string {
	stmt := r.Statement
	data := ""
	if i := strings.Index(stmt, "\n"); i >= 0 && strings.Contains(stmt[:i], " FORMAT ") {
		stmt, data = stmt[:i], fmt.Sprintf(" …and %d lines of data", strings.Count(stmt[i:], "\n"))
	}
	// Comment lines say nothing of what ran.
	var lines []string
	for _, l := range strings.Split(stmt, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "--") {
			lines = append(lines, l)
		}
	}
	stmt = strings.Join(strings.Fields(strings.Join(lines, "\n")), " ")
	if len(stmt) > 400 {
		stmt = stmt[:397] + "..."
	}
	if r.Err != nil {
		return stmt + data + fmt.Sprintf(" → Code: %d (%s)", r.Err.Code, r.Err.Name)
	}
	return stmt + data
}

// Column is a result's column.
type Column struct {
	Name, Type string
}

// Result is what one statement answered: no columns for a statement that
// returns nothing (DDL, INSERT). A value is as JSON decodes it: a
// json.Number, a string, a bool, nil, or a []any or map[string]any.
type Result struct {
	Columns []Column
	Rows    [][]any
}

// Error is ClickHouse's error for a statement: its code, name
// (SYNTAX_ERROR) and message, as a server would return them.
type Error struct {
	Statement string
	Code      int
	Name      string
	Message   string
}

func (e *Error) Error() string {
	return fmt.Sprintf("chDB: %q failed: Code: %d. %s (%s)", abbreviate(e.Statement), e.Code, e.Message, e.Name)
}

// Start starts a session on v's chDB, in a new directory under the
// system's temporary directory.
func (v *Venv) Start(ctx context.Context, o Options) (*Session, error) {
	dir, err := os.MkdirTemp("", "spatec-chdb-")
	if err != nil {
		return nil, fmt.Errorf("starting chDB: %w", err)
	}
	s := &Session{dir: dir, stderr: &tail{max: 64 << 10}}
	fail := func(err error) (*Session, error) {
		s.Close()
		return nil, fmt.Errorf("starting chDB (%s): %w%s", v.Python, err, s.stderr.say())
	}
	script := filepath.Join(dir, "runner.py")
	if err := os.WriteFile(script, []byte(runnerPy), 0o644); err != nil {
		return fail(err)
	}
	args := []string{script, "file:" + filepath.Join(dir, "data")}
	if o.Config != "" {
		cfg := filepath.Join(dir, "config.xml")
		if err := os.WriteFile(cfg, []byte(o.Config), 0o644); err != nil {
			return fail(err)
		}
		args = append(args, cfg)
	}
	s.cmd = exec.Command(v.Python, args...)
	s.cmd.Dir = dir
	s.cmd.Stderr = s.stderr
	if s.stdin, err = s.cmd.StdinPipe(); err != nil {
		return fail(err)
	}
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		return fail(err)
	}
	s.stdout = bufio.NewReaderSize(out, 1<<20)
	if err := s.cmd.Start(); err != nil {
		return fail(err)
	}
	var hello struct {
		Version string `json:"version"`
	}
	if err := s.read(ctx, &hello); err != nil {
		return fail(err)
	}
	s.Version = hello.Version
	return s, nil
}

// Run runs stmts in order and returns each one's result. The first that
// fails ends the run: its error is an *Error, and the results are those of
// the statements before it.
func (s *Session) Run(ctx context.Context, stmts ...string) ([]Result, error) {
	req, err := json.Marshal(stmts)
	if err != nil {
		return nil, err
	}
	if _, err := s.stdin.Write(append(req, '\n')); err != nil {
		return nil, fmt.Errorf("sending %d statements to chDB: %w%s", len(stmts), err, s.stderr.say())
	}
	var resp struct {
		Results []struct {
			Columns [][2]string `json:"columns"`
			Rows    [][]any     `json:"rows"`
		} `json:"results"`
		Error *struct {
			Index   int    `json:"index"`
			Code    int    `json:"code"`
			Name    string `json:"name"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := s.read(ctx, &resp); err != nil {
		return nil, fmt.Errorf("running %d statements on chDB: %w", len(stmts), err)
	}
	out := make([]Result, len(resp.Results))
	for i, r := range resp.Results {
		for _, c := range r.Columns {
			out[i].Columns = append(out[i].Columns, Column{Name: c[0], Type: c[1]})
		}
		out[i].Rows = r.Rows
		s.ran = append(s.ran, Ran{Statement: stmts[i]})
	}
	if e := resp.Error; e != nil {
		if e.Index != len(out) || e.Index >= len(stmts) {
			return out, fmt.Errorf("chDB answered %d results and an error for statement %d of %d", len(out), e.Index, len(stmts))
		}
		err := &Error{Statement: stmts[e.Index], Code: e.Code, Name: e.Name, Message: e.Message}
		s.ran = append(s.ran, Ran{Statement: err.Statement, Err: err})
		return out, err
	}
	if len(out) != len(stmts) {
		return out, fmt.Errorf("chDB answered %d results for %d statements", len(out), len(stmts))
	}
	return out, nil
}

// Query runs one statement and returns its result.
func (s *Session) Query(ctx context.Context, stmt string) (Result, error) {
	res, err := s.Run(ctx, stmt)
	if err != nil {
		return Result{}, err
	}
	return res[0], nil
}

// Ran lists every statement the session ran, in order.
func (s *Session) Ran() []Ran { return append([]Ran(nil), s.ran...) }

// Close ends the process and removes the session's directory.
func (s *Session) Close() error {
	var err error
	if s.cmd != nil && s.cmd.Process != nil {
		s.stdin.Close()
		// The runner ends at the end of its input; a session stuck in a
		// statement is killed.
		done := make(chan error, 1)
		go func() { done <- s.cmd.Wait() }()
		select {
		case err = <-done:
		case <-time.After(10 * time.Second):
			_ = s.cmd.Process.Kill()
			err = <-done
		}
		if err != nil {
			err = fmt.Errorf("chDB's process: %w%s", err, s.stderr.say())
		}
	}
	if rmErr := os.RemoveAll(s.dir); rmErr != nil && err == nil {
		err = rmErr
	}
	return err
}

// read reads one line of the runner's output into v; a done ctx kills the
// process, which ends the read.
func (s *Session) read(ctx context.Context, v any) error {
	stop := context.AfterFunc(ctx, func() { _ = s.cmd.Process.Kill() })
	line, err := s.stdout.ReadBytes('\n')
	stopped := !stop()
	if stopped && ctx.Err() != nil {
		return fmt.Errorf("chDB killed: %w", ctx.Err())
	}
	if err != nil {
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("chDB's process ended%s", s.stderr.say())
		}
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("reading chDB's answer %q: %w", abbreviate(string(line)), err)
	}
	return nil
}

// Uint64 reads the value at row, col as an unsigned integer.
func (r Result) Uint64(row, col int) (uint64, error) {
	v, err := r.at(row, col)
	if err != nil {
		return 0, err
	}
	switch x := v.(type) {
	case json.Number:
		return strconv.ParseUint(x.String(), 10, 64)
	case string: // a 64-bit integer, when the server quotes them
		return strconv.ParseUint(x, 10, 64)
	}
	return 0, fmt.Errorf("value %v (%T) at row %d, column %d is not an integer", v, v, row, col)
}

// Text reads the value at row, col as a string.
func (r Result) Text(row, col int) (string, error) {
	v, err := r.at(row, col)
	if err != nil {
		return "", err
	}
	switch x := v.(type) {
	case string:
		return x, nil
	case json.Number:
		return x.String(), nil
	}
	return "", fmt.Errorf("value %v (%T) at row %d, column %d is not text", v, v, row, col)
}

func (r Result) at(row, col int) (any, error) {
	if row >= len(r.Rows) || col >= len(r.Rows[row]) {
		return nil, fmt.Errorf("no value at row %d, column %d of a result of %d rows and %d columns", row, col, len(r.Rows), len(r.Columns))
	}
	return r.Rows[row][col], nil
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = t.buf[over:]
	}
	return len(p), nil
}

// say is what the process wrote to stderr, as a suffix for an error.
func (t *tail) say() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(t.buf))
	if s == "" {
		return ""
	}
	return "; its stderr:\n" + s
}

func abbreviate(s string) string {
	if len(s) > 200 {
		return s[:197] + "..."
	}
	return s
}
