package options

// Flink's registry is read from the distribution the Flink arm's image runs:
// the lib/ jars of PyPI's apache-flink-libraries 2.2.1 wheel (flink-dist and
// the table, format, connector and CEP jars beside it), by the Maven module
// entrants/flink/check (dev.spatec.flink.check.Options), which loads every
// class of those jars that declares a static ConfigOption field and reads
// each public one by reflection.
//
// To regenerate options/flink/registry.json:
//
//	go test ./options -run TestRegistryFlinkIsTheSystems -update
//
// It needs java, javac, mvn and bash; the wheel comes from the download
// cache the image builds fill (os.UserCacheDir()/spatec/downloads), fetched
// and checked against its sha256 when absent, and the module's jar from the
// compile cache, built offline from ~/.m2 as .ci/test's `mvn -B -q verify`
// of entrants/flink/check leaves it.

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"spatec.dev/spatec/exec/artefact"
	"spatec.dev/spatec/exec/compile"
	"spatec.dev/spatec/schema"
)

// The wheel entrants/flink/flink.cue installs into /opt/flink/lib (its
// test holds the two to the same URL and digest).
const (
	flinkVersion     = "2.2.1"
	flinkWheelURL    = "https://files.pythonhosted.org/packages/5e/92/45c039bbc685a194c61ecccb3367457f855579123c330252c3eda4f90e4c/apache_flink_libraries-2.2.1-py2.py3-none-any.whl"
	flinkWheelSHA256 = "74dc5546fbd9add8fbcdf1222a237e09491f9b80296241aef8676ec56f8e686e"
	flinkWheelLib    = "pyflink/lib/"
	flinkRegistry    = "options/flink/registry.json"
)

// ExtractFlink returns Flink's registry, as options/flink/registry.json
// holds it.
func ExtractFlink(ctx context.Context, root string) (map[string][]byte, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return nil, fmt.Errorf("Flink's registry: the cache the wheel and the checker are kept in: %w", err)
	}
	cache = filepath.Join(cache, "spatec")
	tree := &compile.Tree{Dir: root, CacheDir: filepath.Join(cache, "compile")}
	checker, err := tree.Build(ctx, schema.Compile{Maven: &schema.Maven{Project: "entrants/flink/check", Jar: "spatec-flink-check.jar"}})
	if err != nil {
		return nil, fmt.Errorf("Flink's registry: building entrants/flink/check: %w", err)
	}
	fetcher := &artefact.Fetcher{CacheDir: filepath.Join(cache, "downloads")}
	wheel, done, err := fetcher.Fetch(ctx, schema.Download{URL: flinkWheelURL, SHA256: flinkWheelSHA256})
	if err != nil {
		return nil, fmt.Errorf("Flink's registry: %w", err)
	}
	defer done()
	lib, err := os.MkdirTemp("", "spatec-flink-lib")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(lib)
	jars, err := flinkUnzipJars(wheel, flinkWheelLib, lib)
	if err != nil {
		return nil, fmt.Errorf("Flink's registry: unpacking %s of the wheel: %w", flinkWheelLib, err)
	}
	// Flink's launcher puts flink-dist after the other jars of lib/; the
	// checker comes last, so that every Flink class is the distribution's.
	isDist := func(jar string) bool { return strings.HasPrefix(filepath.Base(jar), "flink-dist-") }
	slices.SortStableFunc(jars, func(a, b string) int {
		switch {
		case isDist(a) == isDist(b):
			return 0
		case isDist(a):
			return 1
		}
		return -1
	})
	classpath := strings.Join(append(slices.Clone(jars), checker.Path), string(os.PathListSeparator))
	// Flink's own jars are read; log4j's are on the classpath only.
	var flink []string
	for _, j := range jars {
		if strings.HasPrefix(filepath.Base(j), "flink-") {
			flink = append(flink, j)
		}
	}
	cmd := exec.CommandContext(ctx, "java", append([]string{"-cp", classpath, "dev.spatec.flink.check.Options"}, flink...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("Flink's registry: %s: %w\n%s", strings.Join(cmd.Args[:4], " "), err, stderr.String())
	}
	var r Registry
	dec := json.NewDecoder(&stdout)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("Flink's registry: the extractor's output: %w", err)
	}
	if r.Version != flinkVersion {
		return nil, fmt.Errorf("Flink's registry: the wheel's distribution is Flink %s; the arm pins %s", r.Version, flinkVersion)
	}
	r.Source = fmt.Sprintf("%s of %s (sha256 %s), the distribution the Flink arm's image installs: %s",
		strings.TrimSuffix(flinkWheelLib, "/"), path.Base(flinkWheelURL), flinkWheelSHA256, r.Source)
	if err := flinkCheckRegistry(r); err != nil {
		return nil, fmt.Errorf("Flink's registry: %w", err)
	}
	b, err := Marshal(r)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{flinkRegistry: b}, nil
}

// flinkUnzipJars writes the jars directly under prefix in the zip file into dir,
// and returns their paths in name order.
func flinkUnzipJars(file, prefix, dir string) ([]string, error) {
	z, err := zip.OpenReader(file)
	if err != nil {
		return nil, err
	}
	defer z.Close()
	var jars []string
	for _, f := range z.File {
		name, ok := strings.CutPrefix(f.Name, prefix)
		if !ok || strings.Contains(name, "/") || !strings.HasSuffix(name, ".jar") {
			continue
		}
		to := filepath.Join(dir, name)
		if err := unzipEntry(f, to); err != nil {
			return nil, fmt.Errorf("%s: %w", f.Name, err)
		}
		jars = append(jars, to)
	}
	if len(jars) == 0 {
		return nil, errors.New("no jars")
	}
	slices.Sort(jars)
	return jars, nil
}

// flinkCheckRegistry refuses a registry the format does not allow: keys out of
// order or twice, a type not in the list, an enum without values, a
// deprecated spelling whose key to use is not there.
func flinkCheckRegistry(r Registry) error {
	keys := make(map[string]bool, len(r.Options))
	for i, o := range r.Options {
		if i > 0 && r.Options[i-1].Key >= o.Key {
			return fmt.Errorf("option %q follows %q: keys out of order or twice", o.Key, r.Options[i-1].Key)
		}
		keys[o.Key] = true
		switch o.Type {
		case Bool, Int, Float, String, Duration, Size, List, Map, Class, Password, Struct, Any:
		case Enum:
			if len(o.Values) == 0 {
				return fmt.Errorf("option %q: an enum without values", o.Key)
			}
		default:
			return fmt.Errorf("option %q: type %q", o.Key, o.Type)
		}
	}
	for _, o := range r.Options {
		if o.Use != "" && !keys[o.Use] {
			return fmt.Errorf("option %q: use %q, which is not an option", o.Key, o.Use)
		}
		for _, f := range o.Fallback {
			if !keys[f] {
				return fmt.Errorf("option %q: fallback %q, which is not an option", o.Key, f)
			}
		}
	}
	return nil
}
