package main

// Vector's remap programs, as the plans carry them, through the VRL compiler
// Vector 0.57.0 runs and over the sensor-batch corpus: a program Vector
// refuses stops it before it drains anything, and one that compiles must
// still give the closed form's rows. The checker is entrants/vector/vrl, a
// Rust crate on the vrl crate Vector locks.

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"spatec.dev/spatec/internal/testenv"
	"spatec.dev/spatec/schema"
)

// The corpus every arm's own tests run, and its closed form (written by
// `spatec corpus`; corpus_test.go keeps them what the generator writes).
const (
	vrlCheckerCrate  = "../../entrants/vector/vrl"
	sensorCorpus     = "../../workloads/sensor-batch/testdata/arms/messages.bin"
	sensorExpected   = "../../workloads/sensor-batch/testdata/arms/expected.json"
	handledDivision  = "value * 1000 / (seq + 1) ?? 0.0"
	fallibleDivision = "value * 1000 / (seq + 1)"
)

// buildVRLChecker builds the checker in the target directory .ci/test and
// the image builds share, and returns its path. cargo is required under CI.
func buildVRLChecker(t *testing.T) string {
	t.Helper()
	testenv.Require(t, "cargo (the Rust toolchain of entrants/vector/vrl/rust-toolchain.toml, through rustup)", func() error {
		_, err := exec.LookPath("cargo")
		return err
	})
	cache := defaultCache()
	if cache == "" {
		t.Fatal("no user cache directory for cargo's target directory: set HOME or XDG_CACHE_HOME")
	}
	target := filepath.Join(cache, "compile", "cargo-target")
	cmd := exec.CommandContext(t.Context(), "cargo", "build", "--release", "--locked")
	cmd.Dir = vrlCheckerCrate
	cmd.Env = append(os.Environ(), "CARGO_TARGET_DIR="+target, "CARGO_TERM_COLOR=never", "CARGO_TERM_PROGRESS_WHEN=never")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the VRL checker in %s: %v\n%s", vrlCheckerCrate, err, out)
	}
	return filepath.Join(target, "release", "spatec-vrl-check")
}

// vectorConfig is what of Vector's config file the check reads: each
// remap's program and each source's Avro schema.
type vectorConfig struct {
	Sources map[string]struct {
		Decoding struct {
			Codec string `yaml:"codec"`
			Avro  struct {
				Schema string `yaml:"schema"`
			} `yaml:"avro"`
		} `yaml:"decoding"`
	} `yaml:"sources"`
	Transforms map[string]struct {
		Type   string `yaml:"type"`
		Source string `yaml:"source"`
	} `yaml:"transforms"`
}

// vectorProgram returns the one program every remap of p runs, and the one
// Avro schema every source decodes with ("" when they decode none).
func vectorProgram(t *testing.T, p schema.Plan) (program, avroSchema string) {
	t.Helper()
	var cfg vectorConfig
	if err := yaml.Unmarshal([]byte(p.Entrant.Containers["vector"].Files["/etc/vector/spatec.yaml"]), &cfg); err != nil {
		t.Fatalf("reading /etc/vector/spatec.yaml: %v", err)
	}
	programs := map[string]bool{}
	for name, tr := range cfg.Transforms {
		if tr.Type != "remap" {
			t.Fatalf("transform %s is a %s; the check knows remaps only", name, tr.Type)
		}
		programs[tr.Source] = true
		program = tr.Source
	}
	if len(programs) != 1 {
		t.Fatalf("%d remaps carry %d programs; every remap must run the same one", len(cfg.Transforms), len(programs))
	}
	schemas := map[string]bool{}
	for _, s := range cfg.Sources {
		schemas[s.Decoding.Avro.Schema] = true
		avroSchema = s.Decoding.Avro.Schema
	}
	if len(schemas) != 1 {
		t.Fatalf("%d sources decode with %d schemas; every source must decode alike", len(cfg.Sources), len(schemas))
	}
	return program, avroSchema
}

// runChecker runs the checker with args, and returns its output and whether
// it accepted.
func runChecker(t *testing.T, checker string, args ...string) (string, bool) {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), checker, args...).CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("running %s: %v", checker, err)
	}
	return string(out), err == nil
}

// writeTemp writes text to a file of its own and returns its path.
func writeTemp(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestVectorVRLCompilesAndMeetsTheClosedForm: every Vector plan's program
// compiles with Vector's VRL, and on sensor-batch gives exactly the closed
// form's rows from the corpus, and makes no read that copies the batch
// (the checker's copies rule). The same program with its division's error
// left unhandled is refused, which shows the compiler is the one consulted;
// with the batch bound to a variable, which shows the rule is.
func TestVectorVRLCompilesAndMeetsTheClosedForm(t *testing.T) {
	// Every environment's plans, not only the authoritative ones plansOf
	// keeps: a program Vector refuses is wrong wherever it runs.
	var plans []schema.Plan
	for _, d := range planAll(t) {
		if d.Plan.Entrant.Name == "vector" {
			plans = append(plans, d.Plan)
		}
	}
	if len(plans) == 0 {
		t.Fatal("no plan of vector")
	}
	checker := buildVRLChecker(t)

	var expected struct {
		Workload  string `json:"workload"`
		Transform struct {
			DropUnit     string  `json:"drop_unit"`
			QualityFloor float64 `json:"quality_floor"`
		} `json:"transform"`
	}
	raw, err := os.ReadFile(sensorExpected)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &expected); err != nil {
		t.Fatalf("reading %s: %v", sensorExpected, err)
	}
	if expected.Workload != "sensor-batch" {
		t.Fatalf("%s is the closed form of %q, not sensor-batch's", sensorExpected, expected.Workload)
	}

	for _, p := range plans {
		t.Run(p.Env.Name+"/"+p.Variant+"/"+p.Workload.Name, func(t *testing.T) {
			program, avroSchema := vectorProgram(t, p)
			prog := writeTemp(t, "program.vrl", program)
			if p.Workload.Name != "sensor-batch" {
				// No corpus of its own here: Vector must at least start.
				if out, ok := runChecker(t, checker, "--compile-only", prog); !ok {
					t.Fatalf("Vector's VRL refuses the program of %s:\n%s", p.Workload.Name, out)
				}
				return
			}
			// The closed form is for the transform the plan's program
			// restates.
			if tr := p.Workload.Transform; tr.DropUnit != expected.Transform.DropUnit || tr.QualityFloor == nil || *tr.QualityFloor != expected.Transform.QualityFloor {
				t.Fatalf("the plan's transform %+v is not the one %s was computed for, %+v", tr, sensorExpected, expected.Transform)
			}
			if avroSchema == "" {
				t.Fatal("no source decodes Avro")
			}
			avsc := writeTemp(t, "schema.avsc", avroSchema)
			if out, ok := runChecker(t, checker, prog, sensorCorpus, avsc, sensorExpected); !ok {
				t.Fatalf("the checker refuses the program (VRL's diagnostic, a read that copies the batch, or a miss of the closed form):\n%s\nprogram:\n%s", out, program)
			} else {
				t.Log(strings.TrimSpace(out))
			}

			// The checker's copies rule is applied to this very program: the
			// same program with the batch bound to a variable is refused,
			// though it compiles and its rows are the same.
			t.Run("whole-event-copy-refused", func(t *testing.T) {
				copied := writeTemp(t, "copied.vrl", "batch = .\n"+program)
				out, ok := runChecker(t, checker, copied, sensorCorpus, avsc, sensorExpected)
				if ok {
					t.Fatalf("the checker accepts a program that binds the whole event:\n%s", out)
				}
				if !strings.Contains(out, "line 1, column 9: `.` reads the whole event") {
					t.Errorf("the refusal is not the copies rule's:\n%s", out)
				}
			})

			t.Run("unhandled-division-refused", func(t *testing.T) {
				if n := strings.Count(program, handledDivision); n != 1 {
					t.Fatalf("the program has %q %d times; the check removes its fallback from exactly one", handledDivision, n)
				}
				unhandled := writeTemp(t, "unhandled.vrl", strings.Replace(program, handledDivision, fallibleDivision, 1))
				out, ok := runChecker(t, checker, "--compile-only", unhandled)
				if ok {
					t.Fatalf("the checker accepts the division without its fallback:\n%s", out)
				}
				// VRL's refusals of a fallible expression left unhandled,
				// by their error codes: as a statement (E100), as the value
				// of an assignment (E103), as a function's argument (E630).
				fallible := regexp.MustCompile(`error\[E(100|103|630)\]: (unhandled error|unhandled fallible assignment|fallible argument)`)
				if !fallible.MatchString(out) || !strings.Contains(out, fallibleDivision) {
					t.Errorf("the refusal is not VRL's for the unhandled division:\n%s", out)
				}
			})
		})
	}
}
