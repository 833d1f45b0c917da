package sensorbatch_test

import (
	"context"
	"strings"
	"testing"

	"spatec.dev/spatec"
	"spatec.dev/spatec/compiler"
	"spatec.dev/spatec/workloads"
	sensorbatch "spatec.dev/spatec/workloads/sensor-batch"
)

// TestHarnessLabelIsLicensedByTheGoldenFingerprints is the licence for the
// reference harness's dataset_version. An export labels a spatec record of
// sensor-batch@1c12224f4f7f with the harness's d2-60d7e5bb2a82 because the
// sensor-batch workload the tree declares, which spatec labels
// sensor-batch@1c12224f4f7f, generates a corpus whose fingerprints are the
// ones the harness's golden test pins beside d2-60d7e5bb2a82. Should the
// generator or the declaration drift, this fails, and the label must go
// (or the drift be undone): the pair in published.go is what is licensed.
func TestHarnessLabelIsLicensedByTheGoldenFingerprints(t *testing.T) {
	tree, err := compiler.Load(compiler.Options{FS: spatec.Tree, Display: "(embedded)/"})
	if err != nil {
		t.Fatal(err)
	}
	wl, err := tree.Workload("sensor-batch", 1000)
	if err != nil {
		t.Fatal(err)
	}
	// Both halves are reported: which fingerprints moved, and whether the
	// label spatec gives the corpus is still the one licensed.
	k, err := workloads.SensorBatch(wl)
	if err != nil {
		t.Fatal(err)
	}
	want := sensorbatch.HarnessGolden()
	got, err := k.Fingerprint(context.Background(), want.Batches)
	if err != nil {
		t.Fatal(err)
	}
	if d := got.Differences(want); len(d) > 0 {
		t.Errorf("%s is carried as %s because the tree's corpus has the harness's golden fingerprints, and it no longer has: %s",
			sensorbatch.DatasetVersion, sensorbatch.HarnessDatasetVersion, strings.Join(d, "; "))
	}
	if wl.DatasetVersion != sensorbatch.DatasetVersion {
		t.Errorf("the tree's sensor-batch workload is %s; the harness's label %s is licensed for %s only. If its corpus still has the harness's fingerprints, "+
			"set DatasetVersion in published.go to the new label in the same change; if not, it is not the harness's corpus",
			wl.DatasetVersion, sensorbatch.HarnessDatasetVersion, sensorbatch.DatasetVersion)
	}

	// The licence goes both ways, and covers that one dataset alone.
	if h, ok := sensorbatch.HarnessLabel(wl.DatasetVersion); !ok || h != sensorbatch.HarnessDatasetVersion {
		t.Errorf("HarnessLabel(%s) = %q, %v; want %s", wl.DatasetVersion, h, ok, sensorbatch.HarnessDatasetVersion)
	}
	if s, ok := sensorbatch.SpatecLabel(sensorbatch.HarnessDatasetVersion); !ok || s != wl.DatasetVersion {
		t.Errorf("SpatecLabel(%s) = %q, %v; want %s", sensorbatch.HarnessDatasetVersion, s, ok, wl.DatasetVersion)
	}
	other, err := tree.Workload("json-rows", 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{other.DatasetVersion, "sensor-batch@000000000000", ""} {
		if h, ok := sensorbatch.HarnessLabel(v); ok {
			t.Errorf("HarnessLabel(%q) = %q: a dataset the golden tests did not check has no harness label", v, h)
		}
	}
	if s, ok := sensorbatch.SpatecLabel("d2-000000000000"); ok {
		t.Errorf("SpatecLabel of another harness corpus = %q", s)
	}
}
