package schema_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
)

// TestWorkloadsAreTheTrees: the schema's #Workloads, which both tools
// check an entrant's implements against (a CUE package cannot list its
// siblings), names every workload package of the tree and no other.
func TestWorkloadsAreTheTrees(t *testing.T) {
	files, err := filepath.Glob("../workloads/*/workload.cue")
	if err != nil {
		t.Fatal(err)
	}
	var tree []string
	for _, f := range files {
		tree = append(tree, filepath.Base(filepath.Dir(f)))
	}
	src, err := os.ReadFile("entrant.cue")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^#Workloads: \[(.*)\]$`).FindSubmatch(src)
	if m == nil {
		t.Fatal("schema/entrant.cue declares no #Workloads list")
	}
	listed := regexp.MustCompile(`"([^"]+)"`).FindAllStringSubmatch(string(m[1]), -1)
	var schema []string
	for _, l := range listed {
		schema = append(schema, l[1])
	}
	slices.Sort(tree)
	slices.Sort(schema)
	if !slices.Equal(tree, schema) {
		t.Errorf("schema/entrant.cue's #Workloads is %v; the tree's workloads are %v: write those", schema, tree)
	}
}
