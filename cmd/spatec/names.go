package main

import (
	"fmt"
	"slices"
	"strings"

	"spatec.dev/spatec/compiler"
	"spatec.dev/spatec/schema"
)

// loadEnvironment loads the tree at dir and resolves one environment of
// it by name: a name the tree lacks is a usage error.
func loadEnvironment(dir, name string) (*schema.Environment, error) {
	t, err := loadTree(dir)
	if err != nil {
		return nil, err
	}
	if err := checkNames(t, name, nil); err != nil {
		return nil, err
	}
	return t.Environment(name)
}

// checkNames makes a misspelt environment, entrant or variant a usage
// error that names the candidates, closest first, before anything is
// resolved: REFUSED is for the contract and the host, not for typing.
func checkNames(t *compiler.Tree, env string, args []string) error {
	if env != allEnvs && !slices.Contains(t.Environments(), env) {
		return usageError{fmt.Sprintf("no environment %q; the tree has: %s", env, strings.Join(closest(env, t.Environments()), ", "))}
	}
	for _, a := range args {
		e, v, hasVariant := strings.Cut(a, ":")
		if !slices.Contains(t.Entrants(), e) {
			return usageError{fmt.Sprintf("no entrant %q; the tree has: %s", e, strings.Join(closest(e, t.Entrants()), ", "))}
		}
		if names, _ := t.Variants(e); hasVariant && !slices.Contains(names, v) {
			return usageError{fmt.Sprintf("entrant %s has no variant %q; it has: %s", e, v, strings.Join(closest(v, names), ", "))}
		}
		if env != allEnvs && !t.Supports(e, env) {
			var supported []string
			for _, name := range t.Environments() {
				if t.Supports(e, name) {
					supported = append(supported, name)
				}
			}
			return usageError{fmt.Sprintf("entrant %s does not run in %s; it supports: %s", e, env, strings.Join(supported, ", "))}
		}
	}
	return nil
}

// closest orders names by their edit distance to name, nearest first, and
// names at the same distance alphabetically.
func closest(name string, names []string) []string {
	out := slices.Clone(names)
	slices.SortFunc(out, func(a, b string) int {
		if d := distance(name, a) - distance(name, b); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	return out
}

// distance is the Levenshtein distance between a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
