package record

import (
	"path/filepath"
	"strings"
	"testing"
)

// Each case writes a tree with one violation after a valid first line and
// asserts Validate's exact location and message.
func TestValidateReportsEachViolationWithFileAndLine(t *testing.T) {
	type fixture struct {
		root  string
		file  string // results/local/reference/2026-03.jsonl under root
		valid string // a valid first line
	}
	for _, tc := range []struct {
		name string
		// build returns the second line(s) of the file, or writes files itself.
		build func(t *testing.T, fx fixture, rec *Record) string
		want  []string // "LOC: message prefix", LOC relative to root
	}{
		{
			name:  "unparseable line",
			build: func(t *testing.T, fx fixture, rec *Record) string { return "{\"schema\": spatec}\n" },
			want:  []string{"local/reference/2026-03.jsonl:2: not a valid record: invalid character 's'"},
		},
		{
			name: "truncated last line",
			build: func(t *testing.T, fx fixture, rec *Record) string {
				return line(t, rec)[:200]
			},
			want: []string{"local/reference/2026-03.jsonl:2: truncated record: the last line has no newline and ends in the middle of a JSON value"},
		},
		{
			name: "unknown schema version",
			build: func(t *testing.T, fx fixture, rec *Record) string {
				return mutated(t, rec, func(m map[string]any) { m["schema"] = "spatec.record/v9" })
			},
			want: []string{`local/reference/2026-03.jsonl:2: unknown schema version "spatec.record/v9"; this spatec reads "spatec.record/v1"`},
		},
		{
			name: "duplicate run id across files names both places",
			build: func(t *testing.T, fx fixture, rec *Record) string {
				// The second file repeats the first file's first record.
				writeFile(t, filepath.Join(fx.root, "local", "reference", "2026-04.jsonl"), fx.valid)
				return ""
			},
			want: []string{"local/reference/2026-04.jsonl:1: duplicate run_id RUNID: also at ROOT/local/reference/2026-03.jsonl:1"},
		},
		{
			name:  "duplicate run id in one file",
			build: func(t *testing.T, fx fixture, rec *Record) string { return fx.valid },
			want:  []string{"local/reference/2026-03.jsonl:2: duplicate run_id RUNID: also at ROOT/local/reference/2026-03.jsonl:1"},
		},
		{
			name: "unknown unit",
			build: func(t *testing.T, fx fixture, rec *Record) string {
				rec.Metrics["rows_per_s"] = Metric{Value: 1, Unit: "records/s", HigherIsBetter: true}
				return line(t, rec)
			},
			want: []string{`local/reference/2026-03.jsonl:2: run ID2: metric rows_per_s has unit "records/s", which is not a known unit (known: rows/s, msg/s, bytes/s, cores, bytes, s, count, ratio)`},
		},
		{
			name: "missing provenance",
			build: func(t *testing.T, fx fixture, rec *Record) string {
				rec.Run.EnvDigest, rec.Run.PlanDigest, rec.Run.SpatecVersion = "", "", ""
				rec.Run.Host = Host{}
				return line(t, rec)
			},
			want: []string{"local/reference/2026-03.jsonl:2: run ID2: missing provenance: run.env_digest, run.plan_digest, run.spatec_version, run.host.cores, run.host.kernel, run.host.cgroup_version, run.host.engine_version (C14"},
		},
		{
			name: "unknown status",
			build: func(t *testing.T, fx fixture, rec *Record) string {
				return mutated(t, rec, func(m map[string]any) { m["status"] = "flaky" })
			},
			want: []string{`local/reference/2026-03.jsonl:2: run ID2: unknown status "flaky" (known: ok, infra_bound, refused, failed)`},
		},
		{
			name: "record of another environment than its directory",
			build: func(t *testing.T, fx fixture, rec *Record) string {
				rec.Run.Env = "bench96"
				return line(t, rec)
			},
			want: []string{`local/reference/2026-03.jsonl:2: run ID2 belongs to environment "bench96", not "local"; records of different environments are never compared. Move it to results/bench96/`},
		},
		{
			name: "record of another entrant than its directory",
			build: func(t *testing.T, fx fixture, rec *Record) string {
				rec.SUT.Entrant = "vector"
				return line(t, rec)
			},
			want: []string{`local/reference/2026-03.jsonl:2: run ID2 is of entrant "vector", but the file is under "reference"`},
		},
		{
			name: "unknown field",
			build: func(t *testing.T, fx fixture, rec *Record) string {
				return mutated(t, rec, func(m map[string]any) { m["mood"] = "optimistic" })
			},
			want: []string{`local/reference/2026-03.jsonl:2: run ID2: json: unknown field "mood"`},
		},
		{
			name: "measured status without metrics",
			build: func(t *testing.T, fx fixture, rec *Record) string {
				rec.Status, rec.Metrics = StatusInfraBound, nil
				return line(t, rec)
			},
			want: []string{"local/reference/2026-03.jsonl:2: run ID2: status infra_bound says the run was measured, but metrics is empty"},
		},
		{
			name: "repetition out of range",
			build: func(t *testing.T, fx fixture, rec *Record) string {
				rec.Rep, rec.Reps = 4, 3
				return line(t, rec)
			},
			want: []string{"local/reference/2026-03.jsonl:2: run ID2: rep 4 of 3: rep must be between 1 and reps"},
		},
		{
			name: "run id not a UUIDv7",
			build: func(t *testing.T, fx fixture, rec *Record) string {
				rec.RunID = "6ba7b810-9dad-41d1-80b4-00c04fd430c8"
				return line(t, rec)
			},
			want: []string{"local/reference/2026-03.jsonl:2: run 6ba7b810-9dad-41d1-80b4-00c04fd430c8: run_id 6ba7b810-9dad-41d1-80b4-00c04fd430c8 is a version 4 UUID; spatec writes UUIDv7"},
		},
		{
			name: "file outside the layout",
			build: func(t *testing.T, fx fixture, rec *Record) string {
				writeFile(t, filepath.Join(fx.root, "stray.jsonl"), line(t, rec))
				return ""
			},
			want: []string{"stray.jsonl: not where a results file belongs: expected ROOT/<env>/<entrant>/<YYYY-MM>.jsonl"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			first := sample(t)
			fx := fixture{root: root, file: filepath.Join(root, "local", "reference", "2026-03.jsonl"), valid: line(t, first)}
			second := sample(t)
			writeFile(t, fx.file, fx.valid+tc.build(t, fx, second))

			problems := Validate(root)
			var want []string
			for _, w := range tc.want {
				w = strings.NewReplacer("ROOT", root, "RUNID", first.RunID, "ID2", second.RunID).Replace(w)
				want = append(want, filepath.Join(root, w))
			}
			assertProblems(t, problems, want)
		})
	}
}

func TestValidateReportsEveryProblemNotTheFirst(t *testing.T) {
	root := t.TempDir()
	a, b := sample(t), sample(t)
	b.Run.SpatecVersion = ""
	b.Metrics["x"] = Metric{Value: 1, Unit: "furlongs"}
	path := filepath.Join(root, "local", "reference", "2026-03.jsonl")
	writeFile(t, path, "garbage\n"+line(t, a)+line(t, b)+line(t, a))

	sum, problems := ValidateTree(root)
	if sum.Files != 1 || sum.Records != 3 {
		t.Errorf("summary %+v, want 1 file and 3 records", sum)
	}
	assertProblems(t, problems, []string{
		path + ":1: not a valid record",
		path + ":3: run " + b.RunID + ": missing provenance: run.spatec_version",
		path + ":3: run " + b.RunID + `: metric x has unit "furlongs"`,
		path + ":4: duplicate run_id " + a.RunID + ": also at " + path + ":2",
	})
}

func TestValidateMissingRoot(t *testing.T) {
	root := filepath.Join(t.TempDir(), "nope")
	problems := Validate(root)
	if len(problems) != 1 || !strings.HasPrefix(problems[0].String(), root+": cannot walk") {
		t.Fatalf("problems %v, want one saying %s cannot be walked", problems, root)
	}
}
