package harness

import (
	"maps"
	"os"
	"strings"
	"testing"

	"spatec.dev/spatec/schema"
)

// withFile is plans with one container's file rewritten.
func withFile(t *testing.T, plans map[string]schema.Plan, arm, container, file string, edit func(string) string) map[string]schema.Plan {
	t.Helper()
	out := maps.Clone(plans)
	p := out[arm]
	p.Entrant.Containers = maps.Clone(p.Entrant.Containers)
	c := p.Entrant.Containers[container]
	c.Files = maps.Clone(c.Files)
	before := c.Files[file]
	c.Files[file] = edit(before)
	if c.Files[file] == before {
		t.Fatalf("the edit of %s's %s changed nothing", arm, file)
	}
	p.Entrant.Containers[container] = c
	out[arm] = p
	return out
}

// withEnv is plans with one container's environment edited.
func withEnv(plans map[string]schema.Plan, arm, container string, edit func(map[string]string)) map[string]schema.Plan {
	out := maps.Clone(plans)
	p := out[arm]
	p.Entrant.Containers = maps.Clone(p.Entrant.Containers)
	c := p.Entrant.Containers[container]
	c.Environment = maps.Clone(c.Environment)
	edit(c.Environment)
	p.Entrant.Containers[container] = c
	out[arm] = p
	return out
}

// TestTheAccountFailsOnAChangedSetting: a harness setting changed in a
// plan without its account, or a setting added without one, fails the
// account with a message that names it.
func TestTheAccountFailsOnAChangedSetting(t *testing.T) {
	facts, a := readBoth(t)
	plans := defaultPlans(t)
	tree := os.DirFS("..")
	const flinkConf, vectorConf = "/opt/flink/conf/config.yaml", "/etc/vector/spatec.yaml"
	for _, c := range []struct {
		name  string
		plans map[string]schema.Plan
		want  string
	}{{
		name: "Flink's registration delay set, which the harness leaves at Flink's default",
		plans: withFile(t, plans, "flink", "tm", flinkConf, func(s string) string {
			return s + "cluster.registration.error-delay: 1 s\n"
		}),
		want: "sets cluster.registration.error-delay",
	}, {
		name: "Flink's checkpoint interval changed",
		plans: withFile(t, plans, "flink", "tm", flinkConf, func(s string) string {
			return strings.Replace(s, "execution.checkpointing.interval: 5s", "execution.checkpointing.interval: 10s", 1)
		}),
		want: "execution.checkpointing.interval",
	}, {
		name: "Flink's synchronous inserts dropped",
		plans: withEnv(plans, "flink", "tm", func(env map[string]string) {
			for k, v := range env {
				if strings.Contains(k, "ASYNC_INSERT") || strings.Contains(v, "async_insert") {
					delete(env, k)
				}
			}
		}),
		want: "ASYNC_INSERT",
	}, {
		name: "Vector's program changed",
		plans: withFile(t, plans, "vector", "vector", vectorConf, func(s string) string {
			return strings.Replace(s, "upcase(", "downcase(", 1)
		}),
		want: "source#digest",
	}} {
		t.Run(c.name, func(t *testing.T) {
			res := Account(facts, a, c.plans, tree)
			var all []string
			for _, r := range res.Rows {
				if r.Problem != "" {
					all = append(all, r.Problem)
				}
			}
			all = append(all, res.Problems...)
			for _, p := range all {
				if strings.Contains(p, c.want) {
					t.Logf("fails as it should: %s", clip(p))
					return
				}
			}
			t.Errorf("no problem names %q; the account found: %s", c.want, strings.Join(all, "\n"))
		})
	}
}
