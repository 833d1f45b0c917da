package harness

import (
	"os"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

// TestExtractReadsEachKindOfFile: each kind of file the harness keeps gives
// its settings as facts, and prose, comments and presentation give none.
func TestExtractReadsEachKindOfFile(t *testing.T) {
	fsys := fstest.MapFS{
		"rust-toolchain.toml":                   {Data: []byte("[toolchain]\nchannel = \"1.97\"\n")},
		"workload/workload.toml":                {Data: []byte("[generator]\nevents_per_batch = 100\nunits = [\"a\", \"b\"]\n")},
		"workload/clickhouse/ddl.sql":           {Data: []byte("-- a comment; SETTINGS x = 1\nCREATE TABLE IF NOT EXISTS t (a UInt8) ENGINE = MergeTree ORDER BY a\nSETTINGS window = 1000, other = 'v';\n")},
		"environments/c8g-8xl-ec2-docker.toml":  {Data: []byte("[host]\ncores = 32\n")},
		"entrants/a/entrant.toml":               {Data: []byte("[entrant]\nname = \"A\"\nstatus = \"active\"\n[display]\nhue = 3\n[[deviations]]\nwhat = \"prose\"\naffects = [\"cpu\"]\n")},
		"entrants/a/Dockerfile":                 {Data: []byte("# FROM nothing\nFROM img:1 AS b\nRUN python3 - <<'PY'\nENV NOT=this\nPY\nFROM img:2\nENV A=1 \\\n    B=\"two words\"\nARG C=3\n")},
		"entrants/a/conf.yaml":                  {Data: []byte("a:\n  b: 1\nlist: &x\n  k: v\ncopy: *x\n")},
		"entrants/a/w.properties.tmpl":          {Data: []byte("# c\nk.a = @X@\nk.b=2\n")},
		"entrants/a/config.d/s.xml":             {Data: []byte("<clickhouse><logger><level>warning</level></logger><t remove=\"remove\"/></clickhouse>")},
		"entrants/a/src/main/java/Job.java":     {Data: []byte(`props.setProperty("k", "v"); settings.put("async_insert", "0");`)},
		"entrants/a/transform.vrl":              {Data: []byte("# comment\nx = .a # trailing\n\ny = \"#not a comment\"\n")},
		"entrants/a/entrypoint.sh":              {Data: []byte("X=\"${X:-5}\"\nexport Y=7\n")},
		"entrants/a/src/main.rs":                {Data: []byte(`let t = env_u64("THREADS", 2); commit_interval: Duration::from_secs(5), "metrics: {{ exporter: none }}\n settings: {{ async_insert: \"0\" }}"`)},
		"entrants/a/README.md":                  {Data: []byte("k = v\n")},
		"harness/src/corpus.rs":                 {Data: []byte("fn other() { x.set(\"linger.ms\", \"5\") }\npub fn prefill(\n) {\n  ClientConfig::new().set(\"bootstrap.servers\", b).set(\"linger.ms\", \"20\")\n}\nfn after() { x.set(\"acks\", \"1\") }\n")},
		"entrants/a/pom.xml":                    {Data: []byte("<project><properties><v>2.2.1</v></properties><dependencies><dependency><groupId>g</groupId><artifactId>a</artifactId><version>${v}</version></dependency></dependencies></project>")},
		"entrants/a/src/test/java/JobTest.java": {Data: []byte(`x.put("test", "only")`)},
	}
	facts, err := Extract(fsys)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range facts {
		got[f.File+" "+f.Key] = f.Value
	}
	want := map[string]string{
		"rust-toolchain.toml toolchain.channel":               "1.97",
		"workload/workload.toml generator.events_per_batch":   "100",
		"workload/workload.toml generator.units":              "[a, b]",
		"workload/clickhouse/ddl.sql statement.t":             "CREATE TABLE IF NOT EXISTS t",
		"workload/clickhouse/ddl.sql t.SETTINGS.window":       "1000",
		"workload/clickhouse/ddl.sql t.SETTINGS.other":        "v",
		"environments/c8g-8xl-ec2-docker.toml host.cores":     "32",
		"entrants/a/entrant.toml entrant.status":              "active",
		"entrants/a/entrant.toml deviations[0].affects":       "[cpu]",
		"entrants/a/Dockerfile FROM[0]":                       "img:1",
		"entrants/a/Dockerfile FROM[1]":                       "img:2",
		"entrants/a/Dockerfile ENV.A":                         "1",
		"entrants/a/Dockerfile ENV.B":                         "two words",
		"entrants/a/Dockerfile ARG.C":                         "3",
		"entrants/a/conf.yaml a.b":                            "1",
		"entrants/a/conf.yaml copy.k":                         "v",
		"entrants/a/w.properties.tmpl k.a":                    "@X@",
		"entrants/a/w.properties.tmpl k.b":                    "2",
		"entrants/a/config.d/s.xml logger.level":              "warning",
		"entrants/a/config.d/s.xml t@remove":                  "remove",
		"entrants/a/src/main/java/Job.java java.k":            "v",
		"entrants/a/src/main/java/Job.java java.async_insert": "0",
		"entrants/a/transform.vrl program":                    ProgramDigest("x = .a\ny = \"#not a comment\"", "#"),
		"entrants/a/entrypoint.sh default.X":                  "5",
		"entrants/a/entrypoint.sh export.Y":                   "7",
		"entrants/a/src/main.rs rust.env.THREADS":             "2",
		"entrants/a/src/main.rs rust.commit_interval":         "5s",
		"entrants/a/src/main.rs rust.metrics.exporter":        "none",
		"entrants/a/src/main.rs rust.settings.async_insert":   "0",
		"entrants/a/pom.xml dependency.g:a":                   "2.2.1",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: got %q, want %q", k, got[k], v)
		}
	}
	for k := range got {
		for _, never := range []string{"entrant.name", "display.", ".what", "ENV.NOT", "README", "JobTest", "SETTINGS.x", "prefill.acks", "prefill.bootstrap"} {
			if strings.Contains(k, never) {
				t.Errorf("%s was read as a setting; it is prose, presentation, a comment or a test", k)
			}
		}
	}
	if ProgramDigest("x = 1 # a\n", "#") != ProgramDigest("# b\nx = 1\n\n", "#") {
		t.Error("a program's digest moved with its comments")
	}
}

// TestFactsRoundTrip: facts.tsv reads back what was written, values with
// tabs and newlines included.
func TestFactsRoundTrip(t *testing.T) {
	in := Facts{Commit: "abc", List: []Fact{{"", "f", "k", "a\tb\nc\\d"}, {"arm", "g", "k2", ""}}}
	var b strings.Builder
	if err := in.Write(&b); err != nil {
		t.Fatal(err)
	}
	path := t.TempDir() + "/facts.tsv"
	if err := writeFile(path, b.String()); err != nil {
		t.Fatal(err)
	}
	out, err := ReadFacts(path)
	if err != nil {
		t.Fatal(err)
	}
	if out.Commit != in.Commit || !slices.Equal(out.List, in.List) {
		t.Errorf("read back %+v, wrote %+v", out, in)
	}
}

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o644) }
