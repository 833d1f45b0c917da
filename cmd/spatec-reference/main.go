// Command spatec-reference is the benchmark's reference arm: a plain Go
// consumer that drains the corpus topic into ClickHouse. It shows what an
// honest, straightforward pipeline achieves under the same envelope as
// every other entrant, and it is the arm of the local environment.
//
// How it reads: direct partition assignment, one franz-go client per
// worker, worker w owning the partitions p with p mod consumers = w. With
// consumers equal to partitions (the contract's parallelism rule) every
// partition has a fetcher and an inserter of its own. A consumer group
// would add a join and a rebalance to the start of every measurement
// window and nothing to a single-instance arm; offsets are still committed
// to the named group (as simple, memberless commits) after every insert,
// and read back on start, so a restarted arm resumes where it stopped.
//
// What it reads: the json-rows workload (newline-delimited JSON rows,
// decoded with the standard JSON decoder and written through), or the
// benchmark's sensor-batch workload (Confluent-framed Avro, each message's
// schema looked up by its id in the schema registry once, decoded with
// hamba/avro, its events flattened into rows and transformed as the
// workload specifies; sensor.go).
//
// How it writes: each worker decodes messages into a columnar batch, and
// inserts it as one native block (clickhouse-go, explicit column list, in
// the table's column order) when it holds batch-rows rows or when
// flush-interval has passed since its first row. Offsets are committed
// only after the insert succeeded: at-least-once. A failed insert is
// retried with backoff; rows of a retried insert that had landed become
// duplicates, which the harness counts.
//
// It does not know the expected row count: it runs until SIGTERM or
// SIGINT, then inserts what it holds, commits its offsets (within
// stop-grace) and exits 0. Stopped so, it writes no row twice when started
// again; killed, it writes again what it had inserted and not committed.
//
// Configuration comes from flags, or from the environment variables named
// in each flag's help; a flag given on the command line wins. Both are
// one table (settings.go), which -settings-json prints; a SPATEC_
// variable the table does not hold is refused, with the nearest it does.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"
)

// version is what -version prints; the entrant pins it (C16).
const version = "0.1.1"

// config is the arm's whole configuration.
type config struct {
	Brokers       []string
	Topic         string
	Group         string
	ClickHouse    string // host:port of the native protocol
	Database      string
	User          string
	Password      string
	Table         string
	Consumers     int
	BatchRows     int
	FlushInterval time.Duration
	// StopGrace bounds a clean stop: after SIGTERM, the time to insert
	// the rows held and commit their offsets.
	StopGrace time.Duration
	// Workload is the workload the arm drains: json-rows, or
	// sensor-batch with Registry, the schema registry's URL, and the
	// transform's parameters.
	Workload     string
	Registry     string
	DropUnit     string
	QualityFloor float64
	// Fault breaks a step of the transform on purpose (a test-only
	// variant): "skip-upper".
	Fault string
}

func main() {
	os.Exit(realMain(os.Args[1:], os.Environ(), os.Stdout, os.Stderr))
}

// Exit codes: 0 stopped on a signal, 1 failed while running, 2 bad
// configuration.
func realMain(args, environ []string, stdout, stderr io.Writer) int {
	env := environment(environ)
	cfg, mode, err := parseConfig(args, env, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "spatec-reference: bad configuration:\n  %s\n", strings.ReplaceAll(err.Error(), "\n", "\n  "))
		return 2
	}
	switch mode {
	case printVersion:
		fmt.Fprintf(stdout, "spatec-reference %s\n", version)
		return 0
	case printSettings:
		if err := printRegistry(stdout); err != nil {
			fmt.Fprintf(stderr, "spatec-reference: %v\n", err)
			return 1
		}
		return 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	logger := log.New(stderr, "spatec-reference: ", log.LstdFlags|log.Lmicroseconds)
	getenv := func(name string) string { return env[name] }
	if limit := limitHeap(getenv, os.ReadFile, debug.SetMemoryLimit); limit > 0 {
		logger.Printf("the Go heap is held to %d MiB, three quarters of the container's memory", limit>>20)
	}
	if err := run(ctx, cfg, logger); err != nil {
		logger.Printf("failed: %v", err)
		return 1
	}
	logger.Printf("stopped")
	return 0
}

// environment is environ ("NAME=value" lines) by name; a later line wins,
// as it does for os.Getenv.
func environment(environ []string) map[string]string {
	env := make(map[string]string, len(environ))
	for _, kv := range environ {
		if name, v, ok := strings.Cut(kv, "="); ok {
			env[name] = v
		}
	}
	return env
}

// mode is what the command line asks for besides running.
type mode int

const (
	runArm mode = iota
	printVersion
	printSettings
)

// parseConfig reads flags over environment variables over defaults (the
// settings table, settings.go), and reports every problem at once: an
// unknown SPATEC_ variable among them.
func parseConfig(args []string, env map[string]string, stderr io.Writer) (config, mode, error) {
	fs := flag.NewFlagSet("spatec-reference", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg config
	errs := unknownSettings(env)
	errs = append(errs, bindSettings(fs, &cfg, env)...)
	showVersion := fs.Bool("version", false, "print the version and exit")
	showSettings := fs.Bool("settings-json", false, "print the settings above as JSON (the arm's option registry) and exit")
	if err := fs.Parse(args); err != nil {
		return cfg, runArm, err
	}
	// Neither mode runs anything, so neither is held up by the
	// environment's problems.
	if *showVersion {
		return cfg, printVersion, nil
	}
	if *showSettings {
		return cfg, printSettings, nil
	}
	if fs.NArg() > 0 {
		errs = append(errs, fmt.Errorf("unexpected arguments %q; every setting is a flag", fs.Args()))
	}
	errs = append(errs, checkSettings(&cfg)...)
	if cfg.Group == "" {
		errs = append(errs, errors.New("empty group: set -group or SPATEC_GROUP"))
	}
	if cfg.FlushInterval <= 0 {
		errs = append(errs, fmt.Errorf("flush interval is %v; it must be positive", cfg.FlushInterval))
	}
	if cfg.StopGrace < 0 {
		errs = append(errs, fmt.Errorf("stop grace is %v; it must not be negative", cfg.StopGrace))
	}
	if cfg.Workload == "sensor-batch" {
		if cfg.Registry == "" {
			errs = append(errs, errors.New("the sensor-batch workload decodes with the registry's schemas: set -registry or SPATEC_REGISTRY"))
		}
		if cfg.DropUnit == "" {
			errs = append(errs, errors.New("no drop unit for the sensor-batch transform: set -drop-unit or SPATEC_DROP_UNIT"))
		}
	}
	if cfg.Fault != "" && cfg.Workload != "sensor-batch" {
		errs = append(errs, fmt.Errorf("fault %s breaks the sensor-batch transform; the %s workload has none", cfg.Fault, cfg.Workload))
	}
	return cfg, runArm, errors.Join(errs...)
}
