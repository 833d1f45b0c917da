package exec

import (
	"strings"
	"testing"
	"time"

	"spatec.dev/spatec/exec/cgroup"
)

// scriptedGroup reads back one quota per ReadBack, in order, then the last
// one for ever: a container's cgroup as successive readings find it.
type scriptedGroup struct{ quotas []string }

func (g *scriptedGroup) ReadBack() (cgroup.ReadBack, error) {
	q := g.quotas[0]
	if len(g.quotas) > 1 {
		g.quotas = g.quotas[1:]
	}
	return cgroup.ReadBack{Raw: map[string]string{"cpu.cfs_quota_us": q}}, nil
}
func (*scriptedGroup) Stat() (cgroup.Stat, error) { return cgroup.Stat{}, nil }
func (*scriptedGroup) ResetPeak() (bool, error)   { return false, nil }
func (*scriptedGroup) Close() error               { return nil }

// TestCapWatchRestartedGroup: a group read with no caps once, between its
// container's restart and its runtime writing the limits, is not a change
// in a scenario's window, where restarts are the experiment; outside one,
// the same reading fails the run (C6), and in one a change two readings
// confirm still does.
func TestCapWatchRestartedGroup(t *testing.T) {
	verified := map[string]string{"cpu.cfs_quota_us": "25000"}
	for _, tc := range []struct {
		name     string
		quotas   []string
		restarts bool
		want     string // in the failure; "" for none
	}{
		{"restart being set up, in a scenario", []string{"25000", "-1", "25000"}, true, ""},
		{"the same reading outside a scenario", []string{"25000", "-1", "25000"}, false, `container clickhouse: cpu.cfs_quota_us read "25000" when verified and "-1" from`},
		{"a change two readings confirm, in a scenario", []string{"25000", "-1", "-1"}, true, `container clickhouse: cpu.cfs_quota_us read "25000" when verified and "-1" from`},
		{"a change seen only at the end, in a scenario", []string{"25000", "25000", "50000"}, true, `read "25000" when verified and "50000"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &scriptedGroup{quotas: tc.quotas}
			w := newCapWatch(time.Now(), []capTarget{{name: "clickhouse", group: g, verified: verified}}, tc.restarts)
			w.check()
			w.check()
			_, err := w.finish()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("failed: %v; want no change", err)
			case tc.want != "" && err == nil:
				t.Errorf("no failure; want one naming %s", tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), "C6: caps changed during the window") || tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Errorf("failed with %v; want C6 naming %s", err, tc.want)
			}
		})
	}
}
