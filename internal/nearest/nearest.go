// Package nearest orders names by how close they are to a misspelt one, for
// the "it has: …" and "did you mean" of a message.
package nearest

import (
	"slices"
	"strings"
)

// Sorted orders names by their edit distance to name, nearest first, and
// names at the same distance alphabetically.
func Sorted(name string, names []string) []string {
	out := slices.Clone(names)
	slices.SortFunc(out, func(a, b string) int {
		if d := Distance(name, a) - Distance(name, b); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	return out
}

// Close returns the name nearest to name when it is close enough to be what
// was meant (at most a third of its letters differ), and "" otherwise.
func Close(name string, names []string) string {
	if len(names) == 0 {
		return ""
	}
	best := Sorted(name, names)[0]
	if d := Distance(name, best); d > 0 && 3*d <= max(len(name), len(best)) {
		return best
	}
	return ""
}

// Distance is the edit distance between a and b, counting two neighbouring
// letters swapped as one edit (the optimal-string-alignment distance): a
// swap is the commonest slip of a typist.
func Distance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
