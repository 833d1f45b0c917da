// Command vrlprogram prints the remap program a Vector plan carries, as
// Vector would read it from the plan's config file: bench/vrl.sh measures
// that program, not a copy of it that could drift from the plan.
//
// Usage (from the checkout):
//
//	go run ./bench/vrlprogram [-env c8g-8xl-ec2-docker] [-variant default] [-o program.vrl]
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"

	"go.yaml.in/yaml/v3"

	spatec "spatec.dev/spatec"
	"spatec.dev/spatec/compiler"
)

// configPath is where the Vector entrant puts its config file.
const configPath = "/etc/vector/spatec.yaml"

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "vrlprogram: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	env := flag.String("env", "c8g-8xl-ec2-docker", "environment the plan is resolved against")
	variant := flag.String("variant", "", "the Vector entrant's variant (empty: its default)")
	out := flag.String("o", "", "write the program to this file instead of standard output")
	flag.Parse()

	// The tree built into the binary: `go run` builds it from this checkout.
	tree, err := compiler.Load(compiler.Options{FS: spatec.Tree, Display: "(embedded)/"})
	if err != nil {
		return fmt.Errorf("loading the CUE tree: %w", err)
	}
	plan, problems := tree.Resolve(*env, "vector", *variant)
	if len(problems) > 0 {
		return fmt.Errorf("resolving vector:%s on %s: %v", *variant, *env, problems)
	}
	c, ok := plan.Entrant.Containers["vector"]
	if !ok {
		return errors.New("the plan has no container named vector")
	}
	file, ok := c.Files[configPath]
	if !ok {
		return fmt.Errorf("the vector container has no file %s", configPath)
	}
	var cfg struct {
		Transforms map[string]struct {
			Type   string `yaml:"type"`
			Source string `yaml:"source"`
		} `yaml:"transforms"`
	}
	if err := yaml.Unmarshal([]byte(file), &cfg); err != nil {
		return fmt.Errorf("reading %s: %w", configPath, err)
	}
	// Every remap runs one program (cmd/spatec's
	// TestVectorVRLCompilesAndMeetsTheClosedForm holds the plans to it); a
	// plan that breaks that is refused here rather than measured by one of
	// its programs.
	programs := map[string][]string{}
	for name, tr := range cfg.Transforms {
		if tr.Type == "remap" {
			programs[tr.Source] = append(programs[tr.Source], name)
		}
	}
	if len(programs) != 1 {
		names := make([]string, 0, len(cfg.Transforms))
		for n := range cfg.Transforms {
			names = append(names, n)
		}
		sort.Strings(names)
		return fmt.Errorf("the plan's remaps %v carry %d programs, not one", names, len(programs))
	}
	var program string
	for p := range programs {
		program = p
	}
	if *out == "" {
		_, err = os.Stdout.WriteString(program)
		return err
	}
	if err := os.WriteFile(*out, []byte(program), 0o644); err != nil {
		return fmt.Errorf("writing the program: %w", err)
	}
	return nil
}
