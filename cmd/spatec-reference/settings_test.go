package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"spatec.dev/spatec/options"
)

// withoutArmSettings is environ less every variable under the arm's
// prefix, for a child that must see only the settings a test gives it.
func withoutArmSettings(environ []string) []string {
	return slices.DeleteFunc(slices.Clone(environ), func(kv string) bool { return strings.HasPrefix(kv, envPrefix) })
}

// goodEnv is a configuration the arm accepts; were it to run, it would
// find nothing on the loopback.
var goodEnv = []string{"SPATEC_BROKERS=127.0.0.1:1", "SPATEC_TOPIC=events", "SPATEC_TABLE=spatec.events"}

func TestAnUnknownSettingIsRefusedWithTheNearest(t *testing.T) {
	for _, tc := range []struct{ env, want string }{
		{"SPATEC_BATCH_ROW=5000", "SPATEC_BATCH_ROW is not a setting of this arm; did you mean SPATEC_BATCH_ROWS?"},
		{"SPATEC_FLUSH_INTERVAL_MS=500", "SPATEC_FLUSH_INTERVAL_MS is not a setting of this arm; did you mean SPATEC_FLUSH_INTERVAL?"},
		{"SPATEC_CLICKHOUSE_URL=http://ch:8123", "SPATEC_CLICKHOUSE_URL is not a setting of this arm; did you mean SPATEC_CLICKHOUSE_USER?"},
		{"SPATEC_NOTHING_LIKE_IT=1", "SPATEC_NOTHING_LIKE_IT is not a setting of this arm; it reads SPATEC_BROKERS, SPATEC_TOPIC,"},
	} {
		var out, errOut bytes.Buffer
		if code := realMain(nil, append(slices.Clone(goodEnv), tc.env), &out, &errOut); code != 2 {
			t.Errorf("%s: exit %d, want 2 (stderr %q)", tc.env, code, errOut.String())
		}
		if !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%s: stderr %q does not say %q", tc.env, errOut.String(), tc.want)
		}
	}
}

// TestOnlyTheArmsPrefixIsItsOwn: a variable outside SPATEC_ (the
// runtime's GOMEMLIMIT, a shell's PATH) is not the arm's to refuse.
func TestOnlyTheArmsPrefixIsItsOwn(t *testing.T) {
	env := environment(append(slices.Clone(goodEnv), "GOMEMLIMIT=1GiB", "PATH=/bin", "SPATECX=1"))
	if _, _, err := parseConfig(nil, env, io.Discard); err != nil {
		t.Fatal(err)
	}
}

// TestTheProgramRefusesAnUnknownSetting runs the real program, which reads
// the process's own environment, with a misspelt variable.
func TestTheProgramRefusesAnUnknownSetting(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0])
	cmd.Env = append(append(withoutArmSettings(os.Environ()), goodEnv...), "SPATEC_REFERENCE_RUN_MAIN=1", "SPATEC_TOPC=events")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if code := cmd.ProcessState.ExitCode(); code != 2 {
		t.Fatalf("exit %d (%v), want 2; it said:\n%s", code, err, stderr.String())
	}
	if want := "SPATEC_TOPC is not a setting of this arm; did you mean SPATEC_TOPIC?"; !strings.Contains(stderr.String(), want) {
		t.Fatalf("it said %q, not %q", stderr.String(), want)
	}
}

// TestSettingsJSONIsTheTable: -settings-json prints every setting once,
// sorted, each with its flag in the flag set, its default one the arm
// parses, and every flag but the two modes is a setting.
func TestSettingsJSONIsTheTable(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := realMain([]string{"-settings-json"}, nil, &out, &errOut); code != 0 {
		t.Fatalf("-settings-json: exit %d: %s", code, errOut.String())
	}
	var reg options.Registry
	dec := json.NewDecoder(&out)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&reg); err != nil {
		t.Fatalf("-settings-json printed no registry: %v", err)
	}
	var keys []string
	for _, o := range reg.Options {
		keys = append(keys, o.Key)
	}
	if len(keys) != len(settings) || !slices.IsSorted(keys) || len(slices.Compact(slices.Clone(keys))) != len(keys) {
		t.Fatalf("keys %v: want the table's %d settings, sorted, each once", keys, len(settings))
	}

	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	var cfg config
	if errs := bindSettings(fs, &cfg, nil); len(errs) > 0 {
		t.Fatalf("the table's defaults do not parse: %v", errs)
	}
	for _, s := range settings {
		if !strings.HasPrefix(s.env, envPrefix) || fs.Lookup(s.flag) == nil {
			t.Errorf("setting %s (-%s): not under %s, or no flag", s.env, s.flag, envPrefix)
		}
	}
	fs.Bool("version", false, "")
	fs.Bool("settings-json", false, "")
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n != len(settings)+2 {
		t.Errorf("%d flags, want the %d settings and -version, -settings-json", n, len(settings))
	}
}
