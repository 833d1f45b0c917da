package nearest

import (
	"slices"
	"testing"
)

// TestSortedClosestThenByName: names at the same distance are listed
// alphabetically, after every closer one.
func TestSortedClosestThenByName(t *testing.T) {
	got := Sorted("k8s-one", []string{"local", "k8s-two", "bench-96c", "k8s-pods", "k8s-single", "retired-32c"})
	if want := []string{"k8s-pods", "k8s-two", "k8s-single", "local", "bench-96c", "retired-32c"}; !slices.Equal(got, want) {
		t.Fatalf("Sorted: got %v, want %v", got, want)
	}
}

func TestClose(t *testing.T) {
	names := []string{"sensor-batch", "json-rows"}
	for in, want := range map[string]string{
		"sensor-bacth": "sensor-batch", // two letters swapped
		"calss":        "",             // not close to either
		"json-row":     "json-rows",
		"avro-rows":    "", // nothing close
		"json-rows":    "", // not misspelt
	} {
		if got := Close(in, names); got != want {
			t.Errorf("Close(%q) = %q, want %q", in, got, want)
		}
	}
}
