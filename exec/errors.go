package exec

import (
	"fmt"
)

// Refusal is a contract check that stopped a run before its measurement
// window opened: caps that do not read back, an engine warning, a version
// that does not match its pin, a topic of the wrong depth. The CLI prints it
// as REFUSED: and exits 3.
type Refusal struct{ Reason string }

func (r *Refusal) Error() string { return r.Reason }

func refusef(format string, args ...any) error { return &Refusal{fmt.Sprintf(format, args...)} }

// Failure is a run that started and did not finish its measurement: a
// timeout short of N rows, a crash, an interruption, a lost ClickHouse.
type Failure struct{ Reason string }

func (f *Failure) Error() string { return f.Reason }

// Unrecorded is a run whose record could not be appended to the log (C14).
// The caller holds the only copy, in the Result: it must keep it some other
// way, and measure no more until records can be written again.
type Unrecorded struct {
	// Path is the log the record was for.
	Path string
	Err  error
}

func (u *Unrecorded) Error() string {
	return fmt.Sprintf("the record could not be appended to %s: %v", u.Path, u.Err)
}

func (u *Unrecorded) Unwrap() error { return u.Err }
