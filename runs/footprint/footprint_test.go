package footprint

import (
	"fmt"
	"strings"
	"testing"
)

const mib = 1 << 20

// arm is a made-up system whose rate and failures follow its memory cap:
// it is OOM-killed below oomAt, runs at half speed below slowAt, and at
// full speed above it, with a little noise between repetitions.
type arm struct{ oomAt, slowAt float64 }

func (a arm) run(cap float64, rep int) Run {
	switch {
	case cap < a.oomAt:
		return Run{Cap: cap, Kind: KindOOM, Why: "container consumer was killed by the kernel's OOM killer during the drain: it reached its memory cap\nlog"}
	case cap < a.slowAt:
		return Run{Cap: cap, Measured: true, Rate: 5000 + float64(rep)}
	}
	return Run{Cap: cap, Measured: true, Rate: 10000 + float64(rep)*10}
}

// drive runs a search to its end against an arm, as `spatec footprint`
// does: each round's caps, every repetition interleaved across them.
func drive(t *testing.T, s Study, a arm) (*Search, [][]float64) {
	t.Helper()
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	search := New(s)
	var rounds [][]float64
	for caps := search.Round(); caps != nil; caps = search.Round() {
		rounds = append(rounds, caps)
		for rep := 1; rep <= s.Reps; rep++ {
			for _, c := range caps {
				search.Add(a.run(c, rep))
			}
		}
		if len(rounds) > 50 {
			t.Fatal("the search does not end")
		}
	}
	return search, rounds
}

// TestSearchLadderThenBisection: the ladder halves the envelope down to the
// floor, then bisection narrows the bracket between the last cap that held
// and the first that did not to the resolution, one cap a round; the
// verdict names the smallest cap that held and how the next one degraded.
func TestSearchLadderThenBisection(t *testing.T) {
	s := Study{Axis: Memory, Full: 1024 * mib, Floor: 16 * mib, Step: 0.5, Resolution: 8 * mib, Fraction: 0.9, Reps: 3}
	search, rounds := drive(t, s, arm{oomAt: 100 * mib, slowAt: 300 * mib})
	ladder := fmt.Sprint(rounds[0])
	if want := fmt.Sprint([]float64{1024 * mib, 512 * mib, 256 * mib, 128 * mib, 64 * mib, 32 * mib, 16 * mib}); ladder != want {
		t.Errorf("ladder %s, want %s", ladder, want)
	}
	for _, r := range rounds[1:] {
		if len(r) != 1 {
			t.Errorf("a bisection round runs one cap, got %v", r)
		}
	}
	res := search.Result()
	// Held at 512 MiB; slow from 256 MiB: the bracket (256, 512] narrows
	// to within 8 MiB of 300 MiB.
	if res.Smallest == nil || res.Smallest.Cap < 300*mib || res.Smallest.Cap > 308*mib {
		t.Fatalf("smallest cap that held: %+v, want within 8 MiB above 300 MiB", res.Smallest)
	}
	if d := res.FirstDegraded; d == nil || d.Kind != KindSlow || res.Smallest.Cap-d.Cap > s.Resolution ||
		!strings.Contains(d.Why, "below the 0.90 the study requires") {
		t.Errorf("first degraded: %+v", d)
	}
	if k := res.Points[len(res.Points)-1]; k.Kind != KindOOM || !strings.HasPrefix(k.Why, "3 of 3 runs were OOM-killed: container consumer was killed by the kernel's OOM killer") {
		t.Errorf("the floor: %+v, want OOM-killed with the run's own words", k)
	}
	if res.Fastest == nil || res.Recommended == nil || res.Recommended.Cap != res.Smallest.Cap {
		t.Errorf("fastest %+v, recommended %+v: every held cap runs at the same rate, so the smallest is recommended", res.Fastest, res.Recommended)
	}
	if search.Phase() != "done" {
		t.Errorf("phase %s", search.Phase())
	}
}

// TestSearchCPUGrain: caps on the CPU axis are on the quota's grain and
// never below the floor.
func TestSearchCPUGrain(t *testing.T) {
	s := Study{Axis: CPUs, Full: 0.5, Floor: 0.05, Step: 0.5, Resolution: 0.05, Fraction: 0.9, Reps: 1}
	if got, want := fmt.Sprint(s.Ladder()), fmt.Sprint([]float64{0.5, 0.25, 0.12, 0.06, 0.05}); got != want {
		t.Errorf("ladder %s, want %s", got, want)
	}
}

// TestEnvelopeThatDoesNotHold: when the envelope itself fails, nothing is
// bisected and no cap is said to hold.
func TestEnvelopeThatDoesNotHold(t *testing.T) {
	s := Study{Axis: Memory, Full: 64 * mib, Floor: 16 * mib, Step: 0.5, Resolution: 8 * mib, Fraction: 0.9, Reps: 2}
	search, rounds := drive(t, s, arm{oomAt: 1024 * mib})
	res := search.Result()
	if len(rounds) != 1 || res.Smallest != nil || res.Full == nil || !res.Full.Degraded || res.Full.Kind != KindOOM {
		t.Errorf("rounds %v, result %+v", rounds, res)
	}
}

// TestAnomalyIsStated: a cap that holds below one that degraded is listed,
// not taken as the smallest.
func TestAnomalyIsStated(t *testing.T) {
	s := Study{Axis: Memory, Full: 256 * mib, Floor: 64 * mib, Step: 0.5, Resolution: 64 * mib, Fraction: 0.9, Reps: 1}
	runs := []Run{
		{Cap: 256 * mib, Measured: true, Rate: 100},
		{Cap: 128 * mib, Measured: true, Rate: 50},
		{Cap: 64 * mib, Measured: true, Rate: 99},
	}
	res := Judge(s, runs, DefaultKnee)
	if res.Smallest.Cap != 256*mib || len(res.Anomalies) != 1 || !strings.Contains(res.Anomalies[0], "64 MiB held (99 rows/s) below 128 MiB") {
		t.Errorf("smallest %v, anomalies %q", res.Smallest.Cap, res.Anomalies)
	}
}

// TestRecommendationIsTheKnee: where a larger cap is faster by more than
// the knee, it is recommended over the smallest that holds.
func TestRecommendationIsTheKnee(t *testing.T) {
	s := Study{Axis: Memory, Full: 256 * mib, Floor: 64 * mib, Step: 0.5, Resolution: 64 * mib, Fraction: 0.9, Reps: 1}
	runs := []Run{
		{Cap: 256 * mib, Measured: true, Rate: 100},
		{Cap: 128 * mib, Measured: true, Rate: 99},
		{Cap: 64 * mib, Measured: true, Rate: 91},
	}
	res := Judge(s, runs, DefaultKnee)
	if res.Smallest.Cap != 64*mib || res.Fastest.Cap != 256*mib || res.Recommended.Cap != 128*mib {
		t.Errorf("smallest %s, fastest %s, recommended %s; want 64 MiB, 256 MiB, 128 MiB",
			s.Show(res.Smallest.Cap), s.Show(res.Fastest.Cap), s.Show(res.Recommended.Cap))
	}
}
