package options

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
)

// runArm runs an arm's own settings printer (name, args) in dir and
// returns what it prints as a registry file: decoded as a Registry (a
// field it does not know is an error), each key once, and written by
// Marshal, so that the bytes do not depend on how the arm's language
// writes JSON.
func runArm(ctx context.Context, dir string, env []string, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("running %s %s in %s: %w\n%s", name, strings.Join(args, " "), dir, err, stderr.Bytes())
	}
	var reg Registry
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&reg); err != nil {
		return nil, fmt.Errorf("reading the registry %s %s printed: %w", name, strings.Join(args, " "), err)
	}
	if reg.System == "" || reg.Version == "" || reg.Source == "" || len(reg.Options) == 0 {
		return nil, fmt.Errorf("%s %s printed a registry without a system, version, source or options", name, strings.Join(args, " "))
	}
	slices.SortStableFunc(reg.Options, func(a, b Option) int { return strings.Compare(a.Key, b.Key) })
	for i, o := range reg.Options {
		if o.Key == "" || o.Type == "" {
			return nil, fmt.Errorf("%s %s printed an option without a key or type: %+v", name, strings.Join(args, " "), o)
		}
		if i > 0 && reg.Options[i-1].Key == o.Key {
			return nil, fmt.Errorf("%s %s printed the option %s twice", name, strings.Join(args, " "), o.Key)
		}
	}
	return Marshal(reg)
}
