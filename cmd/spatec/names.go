package main

import (
	"fmt"
	"slices"
	"strings"

	"spatec.dev/spatec/compiler"
	"spatec.dev/spatec/internal/nearest"
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
		return usageError{fmt.Sprintf("no environment %q; the tree has: %s", env, strings.Join(nearest.Sorted(env, t.Environments()), ", "))}
	}
	for _, a := range args {
		e, v, hasVariant := strings.Cut(a, ":")
		if !slices.Contains(t.Entrants(), e) {
			return usageError{fmt.Sprintf("no entrant %q; the tree has: %s", e, strings.Join(nearest.Sorted(e, t.Entrants()), ", "))}
		}
		if names, _ := t.Variants(e); hasVariant && !slices.Contains(names, v) {
			return usageError{fmt.Sprintf("entrant %s has no variant %q; it has: %s", e, v, strings.Join(nearest.Sorted(v, names), ", "))}
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
