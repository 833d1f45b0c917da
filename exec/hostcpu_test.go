package exec

import (
	"strings"
	"testing"
	"time"
)

// /proc/stat's aggregate line: busy is user, nice, system, irq and softirq
// (idle and iowait left out), steal its own; an old kernel without a steal
// column steals nothing.
func TestParseProcStat(t *testing.T) {
	const stat = "cpu  1700834 513 472954 4118820 23146 0 12410 1251 0 0\ncpu0 850000 200 236000 2059000 11000 0 6000 600 0 0\n"
	h, err := parseProcStat(strings.NewReader(stat))
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Duration(1700834+513+472954+0+12410) * 10 * time.Millisecond; h.Busy != want || h.Steal != 12510*time.Millisecond {
		t.Errorf("busy %v steal %v; want %v and 12.51s", h.Busy, h.Steal, want)
	}
	old, err := parseProcStat(strings.NewReader("cpu  100 0 50 1000 0 0 0\n"))
	if err != nil || old.Busy != 1500*time.Millisecond || old.Steal != 0 {
		t.Errorf("a kernel without steal: %+v, %v", old, err)
	}
	if _, err := parseProcStat(strings.NewReader("intr 5\n")); err == nil || !strings.Contains(err.Error(), "no cpu line") {
		t.Errorf("no cpu line: %v", err)
	}
}
