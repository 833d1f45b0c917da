package harnessenv_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/pelletier/go-toml/v2"

	"spatec.dev/spatec/internal/harnessenv"
)

// The infrastructure digest computed from the profile's caps as the
// harness computes it is the one the harness publishes for its host.
func TestHarnessInfraDigestOfTheProfile(t *testing.T) {
	if k, d := harnessenv.InfraKey(), harnessenv.InfraDigest(); k != "redpanda|3|8g|16|16g|8" || d != "d867b69febf3" {
		t.Errorf("infrastructure %s, digest %s; the harness's host is redpanda|3|8g|16|16g|8 at d867b69febf3", k, d)
	}
	rec := harnessenv.HostRecord(t)
	c := harnessenv.HostCeilings()
	if rec.Run.EnvDigest != harnessenv.EnvDigest(t) || rec.Run.Infra.Digest != harnessenv.InfraDigest() ||
		c.Consume.Provenance.InfraDigest != harnessenv.InfraDigest() || rec.Run.Infra.CeilingMsgsPerS != c.Consume.MsgsPerS {
		t.Errorf("the record (env %s, infra %s) and the ceilings (infra %s) do not name the profile's digests (%s, %s)",
			rec.Run.EnvDigest, rec.Run.Infra.Digest, c.Consume.Provenance.InfraDigest, harnessenv.EnvDigest(t), harnessenv.InfraDigest())
	}
}

// members are the paths of a decoded JSON or TOML document's members; the
// names under metrics and variant, an arm's own, are "*", and an array's
// elements are one.
func members(v any, prefix string, into map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if prefix == "metrics." || prefix == "variant." {
				k = "*"
			}
			into[prefix+k] = true
			members(e, prefix+k+".", into)
		}
	case []any:
		for _, e := range v {
			members(e, prefix+"[].", into)
		}
	}
}

func jsonMembers(t *testing.T, b []byte) map[string]bool {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	m := map[string]bool{}
	members(v, "", m)
	return m
}

// lacking lists what has and composed does not.
func lacking(has, composed map[string]bool) []string {
	var out []string
	for k := range has {
		if !composed[k] {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// The files composed here hold every member the harness's own files of its
// host hold, and the facts they share: the profile's host and
// infrastructure, the ceilings' infrastructure digest and corpus, and the
// infrastructure every published record read back.
func TestComposedFilesAreTheHarnessPublishedFormats(t *testing.T) {
	dir := harnessenv.Checkout(t, "go test ./internal/harnessenv -run TestComposedFilesAreTheHarnessPublishedFormats")

	published, err := os.ReadFile(filepath.Join(dir, "environments", harnessenv.Name+".toml"))
	if err != nil {
		t.Fatal(err)
	}
	var theirs, ours map[string]any
	if err := toml.Unmarshal(published, &theirs); err != nil {
		t.Fatal(err)
	}
	if err := toml.Unmarshal(harnessenv.ProfileBytes(t), &ours); err != nil {
		t.Fatal(err)
	}
	mt, mo := map[string]bool{}, map[string]bool{}
	members(theirs, "", mt)
	members(ours, "", mo)
	if l := lacking(mt, mo); len(l) > 0 {
		t.Errorf("the profile lacks the harness's members %v", l)
	}
	for _, key := range []string{"id", "class"} {
		if theirs[key] != ours[key] {
			t.Errorf("profile %s: %v; the harness's is %v", key, ours[key], theirs[key])
		}
	}
	th, oh := theirs["host"].(map[string]any), ours["host"].(map[string]any)
	for _, key := range []string{"cpu", "cores", "memory", "arch"} {
		if th[key] != oh[key] {
			t.Errorf("profile host.%s: %v; the harness's is %v", key, oh[key], th[key])
		}
	}
	if a, b := jsonOf(t, theirs["infra"]), jsonOf(t, ours["infra"]); !bytes.Equal(a, b) {
		t.Errorf("profile infra:\n%s\nthe harness's:\n%s", b, a)
	}

	published, err = os.ReadFile(filepath.Join(dir, "environments", "ceilings", harnessenv.Name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	if l := lacking(jsonMembers(t, published), jsonMembers(t, harnessenv.CeilingsBytes(t))); len(l) > 0 {
		t.Errorf("the ceilings lack the harness's members %v", l)
	}
	var ceilings harnessenv.Ceilings
	if err := json.Unmarshal(published, &ceilings); err != nil {
		t.Fatal(err)
	}
	ours2 := harnessenv.HostCeilings()
	for _, p := range append([]harnessenv.Provenance{ceilings.Consume.Provenance}, provenances(ceilings)...) {
		if p.InfraDigest != harnessenv.InfraDigest() || p.DatasetVersion != ours2.Consume.Provenance.DatasetVersion {
			t.Errorf("the harness's ceilings were measured under %s on %s; the composed ones say %s on %s",
				p.InfraDigest, p.DatasetVersion, harnessenv.InfraDigest(), ours2.Consume.Provenance.DatasetVersion)
		}
	}
	if ceilings.Consume.Broker != ours2.Consume.Broker || ceilings.Consume.MessageBytes != ours2.Consume.MessageBytes ||
		ceilings.Consume.Partitions != ours2.Consume.Partitions {
		t.Errorf("the harness's consume ceiling: %s at %d bytes, %d partitions; the composed one %s at %d, %d", ceilings.Consume.Broker,
			ceilings.Consume.MessageBytes, ceilings.Consume.Partitions, ours2.Consume.Broker, ours2.Consume.MessageBytes, ours2.Consume.Partitions)
	}

	rec := harnessenv.HostRecord(t)
	composed := jsonMembers(t, rec.Line(t))
	files, err := filepath.Glob(filepath.Join(dir, "results", harnessenv.Name, "*", "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no results of %s in %s: %v", harnessenv.Name, dir, err)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range bytes.Split(bytes.TrimSpace(raw), []byte("\n")) {
			if l := lacking(jsonMembers(t, line), composed); len(l) > 0 {
				t.Errorf("%s:%d: the composed record lacks %v", f, i+1, l)
			}
			var r harnessenv.Record
			if err := json.Unmarshal(line, &r); err != nil {
				t.Fatalf("%s:%d: %v", f, i+1, err)
			}
			// What the run read back of the infrastructure, but the
			// ceilings it was gated against, which were measured.
			got, want := r.Run.Infra, rec.Run.Infra
			got.CeilingMsgsPerS, got.CeilingBytesPerS, got.CeilingRowsPerS = 0, 0, 0
			want.CeilingMsgsPerS, want.CeilingBytesPerS, want.CeilingRowsPerS = 0, 0, 0
			if got != want || r.Run.EnvID != rec.Run.EnvID || r.Run.DatasetVersion != rec.Run.DatasetVersion || r.Bench != rec.Bench ||
				r.Schema != rec.Schema || r.Run.HarnessVersion != rec.Run.HarnessVersion {
				t.Errorf("%s:%d: the harness's record ran on %+v (%s, %s); the composed one on %+v (%s, %s)", f, i+1,
					got, r.Run.EnvID, r.Run.DatasetVersion, want, rec.Run.EnvID, rec.Run.DatasetVersion)
			}
		}
	}
}

func provenances(c harnessenv.Ceilings) []harnessenv.Provenance {
	var out []harnessenv.Provenance
	for _, in := range c.ClickHouse {
		out = append(out, in.Provenance)
	}
	return out
}

func jsonOf(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
