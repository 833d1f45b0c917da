// Package progress tells a person watching a long run where it is: which
// phase (infra, prefill, expect, verify, drain, gates, teardown), how far through,
// how fast, and how long is left.
//
// On a terminal it redraws one status line in place, at most ten times a
// second. Anywhere else (a CI log, a file, a pipe) it writes plain key=value
// lines, one when a phase starts, one when it ends, and in between at most
// one every two seconds, so a log stays short and a script can parse it:
//
//	progress phase=drain state=start total=100000 unit=rows
//	progress phase=drain done=12000 total=100000 rate=5000/s eta=17.6s
//	progress phase=drain state=end done=100000 total=100000 elapsed=20.1s rate=4975/s
//
// A nil *Reporter is valid and reports nothing, so code can take one
// unconditionally.
package progress

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// The phases of a run, in the order spatec exec goes through them.
const (
	PhaseInfra    = "infra"    // start the broker, ClickHouse and a registry
	PhasePrefill  = "prefill"  // produce the dataset, counted in messages
	PhaseExpect   = "expect"   // compute what a correct arm lands, counted in messages
	PhaseVerify   = "verify"   // read the caps back from the cgroups
	PhaseDrain    = "drain"    // the arm drains the topic, counted in rows
	PhaseGates    = "gates"    // completeness, checksum and ceiling checks
	PhaseTeardown = "teardown" // remove what the run created
)

// Reporter reports the progress of one run's phases. Its methods may be
// called from several goroutines.
type Reporter struct {
	mu       sync.Mutex
	w        io.Writer
	terminal bool
	width    int // terminal width to fit the status line in; 0 when unknown
	now      func() time.Time
	redraw   time.Duration
	every    time.Duration
	window   time.Duration

	phase    string
	unit     string
	total    int64
	done     int64
	started  time.Time
	lastDraw time.Time
	samples  []sample
	drawn    bool // a status line is on the terminal and must be cleared before other output
}

type sample struct {
	at   time.Time
	done int64
}

// Option configures a Reporter.
type Option func(*Reporter)

// WithClock replaces the wall clock, for tests.
func WithClock(now func() time.Time) Option { return func(r *Reporter) { r.now = now } }

// WithTerminal forces terminal (true) or plain (false) output instead of
// detecting it from the writer.
func WithTerminal(on bool) Option { return func(r *Reporter) { r.terminal = on } }

// WithRedrawInterval sets the shortest time between two redraws of the
// terminal status line (default 100 ms).
func WithRedrawInterval(d time.Duration) Option { return func(r *Reporter) { r.redraw = d } }

// WithPlainInterval sets the shortest time between two plain progress lines
// within a phase (default 2 s). Phase starts and ends are always written.
func WithPlainInterval(d time.Duration) Option { return func(r *Reporter) { r.every = d } }

// WithRateWindow sets how far back the rate looks (default 5 s): long
// enough to smooth polling jitter, short enough that a stall shows.
func WithRateWindow(d time.Duration) Option { return func(r *Reporter) { r.window = d } }

// New returns a Reporter writing to w. It draws a status line when w is a
// terminal (a file whose descriptor is a tty), plain lines otherwise.
func New(w io.Writer, opts ...Option) *Reporter {
	r := &Reporter{
		w: w, now: time.Now,
		redraw: 100 * time.Millisecond, every: 2 * time.Second, window: 5 * time.Second,
	}
	if f, ok := w.(interface{ Fd() uintptr }); ok {
		fd := int(f.Fd())
		if term.IsTerminal(fd) {
			r.terminal = true
			if width, _, err := term.GetSize(fd); err == nil {
				r.width = width
			}
		}
	}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Start begins a phase. total is the amount of work in unit (messages,
// rows), or 0 for a phase that is not counted. A phase still open is ended
// first.
func (r *Reporter) Start(phase string, total int64, unit string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.phase != "" {
		r.endLocked("end", nil)
	}
	now := r.now()
	r.phase, r.total, r.unit, r.done = phase, total, unit, 0
	r.started, r.lastDraw = now, now
	r.samples = append(r.samples[:0], sample{now, 0})
	if r.terminal {
		r.drawLocked(now)
		return
	}
	fields := []string{"phase=" + phase, "state=start"}
	if total > 0 {
		fields = append(fields, "total="+strconv.FormatInt(total, 10))
	}
	if unit != "" {
		fields = append(fields, "unit="+unit)
	}
	r.lineLocked(fields)
}

// Set records how much of the phase's work is done.
func (r *Reporter) Set(done int64) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.setLocked(done)
}

// SetTotal changes the amount of work of the current phase, for work whose
// size becomes known as it goes (the layers of an image being pulled).
func (r *Reporter) SetTotal(total int64) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.total = total
}

// Add records n more units done.
func (r *Reporter) Add(n int64) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.setLocked(r.done + n)
}

func (r *Reporter) setLocked(done int64) {
	if r.phase == "" {
		return
	}
	now := r.now()
	r.done = done
	r.samples = append(r.samples, sample{now, done})
	// Keep one sample older than the window so the rate always spans it.
	cut := 0
	for cut < len(r.samples)-1 && now.Sub(r.samples[cut+1].at) >= r.window {
		cut++
	}
	r.samples = r.samples[cut:]

	if r.terminal {
		if now.Sub(r.lastDraw) >= r.redraw {
			r.drawLocked(now)
		}
		return
	}
	if now.Sub(r.lastDraw) >= r.every {
		r.lastDraw = now
		fields := []string{"phase=" + r.phase, "done=" + strconv.FormatInt(done, 10)}
		if r.total > 0 {
			fields = append(fields, "total="+strconv.FormatInt(r.total, 10))
		}
		rate := r.rateLocked(now)
		fields = append(fields, fmt.Sprintf("rate=%.0f/s", rate))
		if eta, ok := r.etaLocked(rate); ok {
			fields = append(fields, "eta="+plainSeconds(eta))
		}
		r.lineLocked(fields)
	}
}

// End closes the current phase as finished.
func (r *Reporter) End() {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.phase != "" {
		r.endLocked("end", nil)
	}
}

// Fail closes the current phase as failed, with the reason.
func (r *Reporter) Fail(err error) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.phase != "" {
		r.endLocked("failed", err)
	}
}

// Printf writes a message line without garbling the status line: on a
// terminal the status line is cleared, the message printed, and the status
// drawn again below it.
func (r *Reporter) Printf(format string, args ...any) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	msg := strings.TrimRight(fmt.Sprintf(format, args...), "\n")
	if r.terminal && r.drawn {
		fmt.Fprintf(r.w, "\r\x1b[K%s\n", msg)
		r.drawn = false
		r.drawLocked(r.now())
		return
	}
	fmt.Fprintln(r.w, msg)
}

func (r *Reporter) endLocked(state string, err error) {
	now := r.now()
	elapsed := now.Sub(r.started).Seconds()
	if r.terminal {
		status := "done in " + humanSeconds(elapsed)
		if state == "failed" {
			status = "FAILED after " + humanSeconds(elapsed)
			if err != nil {
				status += ": " + err.Error()
			}
		}
		r.writeStatusLocked(r.statusLocked(now, status))
		fmt.Fprint(r.w, "\n")
		r.drawn = false
	} else {
		fields := []string{"phase=" + r.phase, "state=" + state}
		if r.total > 0 || r.done > 0 {
			fields = append(fields, "done="+strconv.FormatInt(r.done, 10))
		}
		if r.total > 0 {
			fields = append(fields, "total="+strconv.FormatInt(r.total, 10))
		}
		fields = append(fields, "elapsed="+plainSeconds(elapsed))
		if r.done > 0 && elapsed > 0 {
			fields = append(fields, fmt.Sprintf("rate=%.0f/s", float64(r.done)/elapsed))
		}
		if err != nil {
			fields = append(fields, "error="+strconv.Quote(err.Error()))
		}
		r.lineLocked(fields)
	}
	r.phase, r.unit, r.total, r.done = "", "", 0, 0
	r.samples = r.samples[:0]
}

// rateLocked is units per second over the recent window.
func (r *Reporter) rateLocked(now time.Time) float64 {
	first := r.samples[0]
	last := r.samples[len(r.samples)-1]
	if span := last.at.Sub(first.at).Seconds(); span > 0 {
		return float64(last.done-first.done) / span
	}
	if elapsed := now.Sub(r.started).Seconds(); elapsed > 0 {
		return float64(r.done) / elapsed
	}
	return 0
}

func (r *Reporter) etaLocked(rate float64) (float64, bool) {
	if r.total <= 0 || rate <= 0 {
		return 0, false
	}
	left := r.total - r.done
	if left < 0 {
		left = 0
	}
	return float64(left) / rate, true
}

func (r *Reporter) lineLocked(fields []string) {
	fmt.Fprintf(r.w, "progress %s\n", strings.Join(fields, " "))
}

// drawLocked redraws the terminal status line.
func (r *Reporter) drawLocked(now time.Time) {
	r.lastDraw = now
	rate := r.rateLocked(now)
	tail := ""
	switch eta, ok := r.etaLocked(rate); {
	case ok:
		tail = "ETA " + humanSeconds(eta)
	case r.total > 0 || r.done > 0:
		tail = "ETA unknown"
	default:
		tail = humanSeconds(now.Sub(r.started).Seconds())
	}
	r.writeStatusLocked(r.statusLocked(now, tail))
}

// statusLocked composes "phase  done/total unit  pct  rate  tail".
func (r *Reporter) statusLocked(now time.Time, tail string) string {
	parts := []string{fmt.Sprintf("%-9s", r.phase)}
	unit := r.unit
	if unit != "" {
		unit = " " + unit
	}
	switch {
	case r.total > 0:
		pct := 100 * float64(r.done) / float64(r.total)
		parts = append(parts,
			fmt.Sprintf("%s/%s%s", grouped(r.done), grouped(r.total), unit),
			fmt.Sprintf("%5.1f%%", pct))
	case r.done > 0:
		parts = append(parts, grouped(r.done)+unit)
	}
	if r.done > 0 {
		rate := r.rateLocked(now)
		parts = append(parts, fmt.Sprintf("%s%s/s", grouped(int64(rate+0.5)), unit))
	}
	parts = append(parts, tail)
	return strings.Join(parts, "  ")
}

func (r *Reporter) writeStatusLocked(s string) {
	if r.width > 1 && len([]rune(s)) >= r.width {
		s = string([]rune(s)[:r.width-1])
	}
	fmt.Fprintf(r.w, "\r\x1b[K%s", s)
	r.drawn = true
}

// grouped writes n with thousands separators: 1,234,567.
func grouped(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// plainSeconds is a duration for a parser: seconds with one decimal.
func plainSeconds(s float64) string { return strconv.FormatFloat(s, 'f', 1, 64) + "s" }

// humanSeconds is a duration for a person: 15.6s, 4m05s, 1h02m.
func humanSeconds(s float64) string {
	d := time.Duration(s * float64(time.Second)).Round(time.Second)
	switch {
	case s < 60:
		return plainSeconds(s)
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}
