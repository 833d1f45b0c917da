package progress

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"spatec.dev/spatec/internal/testenv"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

func newClock() *clock { return &clock{t: time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)} }

func lines(buf *bytes.Buffer) []string {
	return strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
}

func TestPlainLinesAreFewAndParseable(t *testing.T) {
	var buf bytes.Buffer
	c := newClock()
	r := New(&buf, WithClock(c.now))

	r.Start("infra", 0, "")
	c.advance(1500 * time.Millisecond)
	r.End()

	r.Start("drain", 100000, "rows")
	// 10 Hz polling at 5000 rows/s for 4 s: two lines, not forty.
	for i := 1; i <= 40; i++ {
		c.advance(100 * time.Millisecond)
		r.Set(int64(i) * 500)
	}
	c.advance(100 * time.Millisecond)
	r.Fail(errors.New(`clickhouse: connection "refused"`))

	want := []string{
		"progress phase=infra state=start",
		"progress phase=infra state=end elapsed=1.5s",
		"progress phase=drain state=start total=100000 unit=rows",
		"progress phase=drain done=10000 total=100000 rate=5000/s eta=18.0s",
		"progress phase=drain done=20000 total=100000 rate=5000/s eta=16.0s",
		`progress phase=drain state=failed done=20000 total=100000 elapsed=4.1s rate=4878/s error="clickhouse: connection \"refused\""`,
	}
	got := lines(&buf)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, l := range got {
		for _, f := range strings.Fields(l)[1:] {
			if !strings.Contains(f, "=") && !strings.HasSuffix(l, `"`) {
				t.Errorf("field %q of %q is not key=value", f, l)
			}
		}
	}
}

func TestRateFollowsTheRecentWindow(t *testing.T) {
	var buf bytes.Buffer
	c := newClock()
	r := New(&buf, WithClock(c.now), WithPlainInterval(time.Second))
	r.Start("prefill", 1000000, "msgs")
	for i := 1; i <= 10; i++ { // 10 s at 10,000 msg/s
		c.advance(time.Second)
		r.Set(int64(i) * 10000)
	}
	for range 6 { // then a stall longer than the 5 s window
		c.advance(time.Second)
		r.Set(100000)
	}
	got := lines(&buf)
	if last := got[len(got)-1]; last != "progress phase=prefill done=100000 total=1000000 rate=0/s" {
		t.Errorf("after a stall the rate should read 0 and the ETA be left out; last line %q", last)
	}
	if l := got[10]; l != "progress phase=prefill done=100000 total=1000000 rate=10000/s eta=90.0s" {
		t.Errorf("at full speed: %q", l)
	}
}

func TestTerminalRedrawsOneLineAtMostTenTimesASecond(t *testing.T) {
	var buf bytes.Buffer
	c := newClock()
	r := New(&buf, WithClock(c.now), WithTerminal(true))
	r.Start("drain", 100000, "rows")
	for i := 1; i <= 100; i++ { // 1 s of updates every 10 ms
		c.advance(10 * time.Millisecond)
		r.Set(int64(i) * 50)
	}
	r.Printf("arm container started: %s", "reference")
	c.advance(10 * time.Millisecond)
	r.Set(100000)
	r.End()

	out := buf.String()
	if n := strings.Count(out, "\r\x1b[K"); n < 10 || n > 14 {
		t.Errorf("%d redraws in about 1 s of updates; want about 10 (start, ~10 Hz, message, end)", n)
	}
	if strings.Count(out, "\n") != 2 {
		t.Errorf("want exactly two newlines (after the message and at the end), got %q", out)
	}
	for _, want := range []string{
		"\r\x1b[Kdrain      0/100,000 rows    0.0%  ETA unknown",
		"\r\x1b[Kdrain      2,500/100,000 rows    2.5%  5,000 rows/s  ETA 19.5s",
		"\r\x1b[Karm container started: reference\n\r\x1b[Kdrain      5,000/100,000 rows    5.0%",
		"\r\x1b[Kdrain      100,000/100,000 rows  100.0%",
		"done in 1.0s\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("terminal output lacks %q:\n%q", want, out)
		}
	}
}

func TestTerminalFailureSaysWhy(t *testing.T) {
	var buf bytes.Buffer
	c := newClock()
	r := New(&buf, WithClock(c.now), WithTerminal(true))
	r.Start("verify", 0, "")
	c.advance(300 * time.Millisecond)
	r.Fail(fmt.Errorf("cpu.cfs_quota_us is 50000, want 100000"))
	if want := "\r\x1b[Kverify     FAILED after 0.3s: cpu.cfs_quota_us is 50000, want 100000\n"; !strings.HasSuffix(buf.String(), want) {
		t.Fatalf("got %q, want it to end with %q", buf.String(), want)
	}
}

func TestNilReporterIsQuiet(t *testing.T) {
	var r *Reporter
	r.Start("drain", 10, "rows")
	r.Set(5)
	r.Add(1)
	r.Printf("x")
	r.Fail(errors.New("x"))
	r.End()
}

func TestNewDetectsTheWriter(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if New(f).terminal {
		t.Error("a regular file was taken for a terminal")
	}
	if New(&bytes.Buffer{}).terminal {
		t.Error("a buffer was taken for a terminal")
	}

	testenv.Require(t, "a pseudo-terminal (/dev/ptmx)", func() error {
		_, err := os.Stat("/dev/ptmx")
		return err
	})
	pts := openPTY(t)
	r := New(pts)
	if !r.terminal {
		t.Fatalf("%s was not detected as a terminal", pts.Name())
	}
	if r.width != 100 {
		t.Errorf("terminal width %d, want the 100 columns set on the pty", r.width)
	}
}

// openPTY opens a pseudo-terminal pair and returns its terminal end, 100
// columns wide.
func openPTY(t *testing.T) *os.File {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ptmx.Close() })
	fd := int(ptmx.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlocking the pty: %v", err)
	}
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("naming the pty: %v", err)
	}
	pts, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pts.Close() })
	if err := unix.IoctlSetWinsize(int(pts.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 40, Col: 100}); err != nil {
		t.Fatalf("sizing the pty: %v", err)
	}
	return pts
}

func TestConcurrentUpdatesAreCounted(t *testing.T) {
	var buf bytes.Buffer
	c := newClock()
	r := New(&buf, WithClock(func() time.Time { return c.t }))
	r.Start(PhasePrefill, 8000, "msgs")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				r.Add(1)
			}
		})
	}
	wg.Wait()
	r.End()
	if got := lines(&buf); !strings.HasPrefix(got[len(got)-1], "progress phase=prefill state=end done=8000 total=8000") {
		t.Fatalf("last line %q; want all 8000 increments counted", got[len(got)-1])
	}
}
