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
// in each flag's help; a flag given on the command line wins.
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
	"strconv"
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
	os.Exit(realMain(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// Exit codes: 0 stopped on a signal, 1 failed while running, 2 bad
// configuration.
func realMain(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	cfg, showVersion, err := parseConfig(args, getenv, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "spatec-reference: bad configuration:\n  %s\n", strings.ReplaceAll(err.Error(), "\n", "\n  "))
		return 2
	}
	if showVersion {
		fmt.Fprintf(stdout, "spatec-reference %s\n", version)
		return 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	logger := log.New(stderr, "spatec-reference: ", log.LstdFlags|log.Lmicroseconds)
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

// parseConfig reads flags over environment variables over defaults, and
// reports every problem at once.
func parseConfig(args []string, getenv func(string) string, stderr io.Writer) (config, bool, error) {
	env := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	var errs []error
	envInt := func(name string, def int) int {
		s := getenv(name)
		if s == "" {
			return def
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q is not an integer", name, s))
		}
		return n
	}
	envFloat := func(name string, def float64) float64 {
		s := getenv(name)
		if s == "" {
			return def
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q is not a number", name, s))
		}
		return f
	}
	envDuration := func(name string, def time.Duration) time.Duration {
		s := getenv(name)
		if s == "" {
			return def
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q is not a duration (such as 500ms)", name, s))
		}
		return d
	}

	fs := flag.NewFlagSet("spatec-reference", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg config
	brokers := fs.String("brokers", env("SPATEC_BROKERS", ""), "seed brokers, comma-separated host:port (SPATEC_BROKERS)")
	fs.StringVar(&cfg.Topic, "topic", env("SPATEC_TOPIC", ""), "topic to drain (SPATEC_TOPIC)")
	fs.StringVar(&cfg.Group, "group", env("SPATEC_GROUP", "spatec-reference"), "group the offsets are committed to (SPATEC_GROUP)")
	fs.StringVar(&cfg.ClickHouse, "clickhouse", env("SPATEC_CLICKHOUSE", "127.0.0.1:9000"), "ClickHouse native protocol host:port (SPATEC_CLICKHOUSE)")
	fs.StringVar(&cfg.Database, "database", env("SPATEC_DATABASE", "default"), "ClickHouse database (SPATEC_DATABASE)")
	fs.StringVar(&cfg.User, "user", env("SPATEC_CLICKHOUSE_USER", "default"), "ClickHouse user (SPATEC_CLICKHOUSE_USER)")
	fs.StringVar(&cfg.Password, "password", env("SPATEC_CLICKHOUSE_PASSWORD", ""), "ClickHouse password (SPATEC_CLICKHOUSE_PASSWORD)")
	fs.StringVar(&cfg.Table, "table", env("SPATEC_TABLE", ""), "table to insert into, optionally database.table (SPATEC_TABLE)")
	fs.IntVar(&cfg.Consumers, "consumers", envInt("SPATEC_CONSUMERS", 1), "consumer parallelism, the topic's partition count (SPATEC_CONSUMERS)")
	fs.IntVar(&cfg.BatchRows, "batch-rows", envInt("SPATEC_BATCH_ROWS", 100_000), "rows per insert (SPATEC_BATCH_ROWS)")
	fs.DurationVar(&cfg.FlushInterval, "flush-interval", envDuration("SPATEC_FLUSH_INTERVAL", 500*time.Millisecond), "insert a partial batch this long after its first row (SPATEC_FLUSH_INTERVAL)")
	fs.DurationVar(&cfg.StopGrace, "stop-grace", envDuration("SPATEC_STOP_GRACE", 3*time.Second), "after SIGTERM, how long to insert the rows held and commit their offsets (SPATEC_STOP_GRACE)")
	fs.StringVar(&cfg.Workload, "workload", env("SPATEC_WORKLOAD", "json-rows"), "the workload: json-rows or sensor-batch (SPATEC_WORKLOAD)")
	fs.StringVar(&cfg.Registry, "registry", env("SPATEC_REGISTRY", ""), "the schema registry's URL, for sensor-batch (SPATEC_REGISTRY)")
	fs.StringVar(&cfg.DropUnit, "drop-unit", env("SPATEC_DROP_UNIT", ""), "the unit whose readings the transform drops, for sensor-batch (SPATEC_DROP_UNIT)")
	fs.Float64Var(&cfg.QualityFloor, "quality-floor", envFloat("SPATEC_QUALITY_FLOOR", 0), "the transform drops a non-null quality below it, for sensor-batch (SPATEC_QUALITY_FLOOR)")
	fs.StringVar(&cfg.Fault, "fault", env("SPATEC_FAULT", ""), "test only: break a step of the transform (skip-upper) (SPATEC_FAULT)")
	showVersion := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		return cfg, false, err
	}
	if *showVersion {
		return cfg, true, nil
	}
	if fs.NArg() > 0 {
		errs = append(errs, fmt.Errorf("unexpected arguments %q; every setting is a flag", fs.Args()))
	}
	for _, b := range strings.Split(*brokers, ",") {
		if b = strings.TrimSpace(b); b != "" {
			cfg.Brokers = append(cfg.Brokers, b)
		}
	}
	if len(cfg.Brokers) == 0 {
		errs = append(errs, errors.New("no broker: set -brokers or SPATEC_BROKERS (host:port,...)"))
	}
	if cfg.Topic == "" {
		errs = append(errs, errors.New("no topic: set -topic or SPATEC_TOPIC"))
	}
	if cfg.Table == "" {
		errs = append(errs, errors.New("no table: set -table or SPATEC_TABLE"))
	}
	if cfg.Group == "" {
		errs = append(errs, errors.New("empty group: set -group or SPATEC_GROUP"))
	}
	if cfg.Consumers < 1 {
		errs = append(errs, fmt.Errorf("consumers is %d; it must be at least 1 (the topic's partition count)", cfg.Consumers))
	}
	if cfg.BatchRows < 1 {
		errs = append(errs, fmt.Errorf("batch rows is %d; it must be at least 1", cfg.BatchRows))
	}
	if cfg.FlushInterval <= 0 {
		errs = append(errs, fmt.Errorf("flush interval is %v; it must be positive", cfg.FlushInterval))
	}
	if cfg.StopGrace < 0 {
		errs = append(errs, fmt.Errorf("stop grace is %v; it must not be negative", cfg.StopGrace))
	}
	switch cfg.Workload {
	case "json-rows":
	case "sensor-batch":
		if cfg.Registry == "" {
			errs = append(errs, errors.New("the sensor-batch workload decodes with the registry's schemas: set -registry or SPATEC_REGISTRY"))
		}
		if cfg.DropUnit == "" {
			errs = append(errs, errors.New("no drop unit for the sensor-batch transform: set -drop-unit or SPATEC_DROP_UNIT"))
		}
	default:
		errs = append(errs, fmt.Errorf("workload %q is not one this arm implements; give json-rows or sensor-batch", cfg.Workload))
	}
	switch {
	case cfg.Fault != "" && cfg.Fault != "skip-upper":
		errs = append(errs, fmt.Errorf("fault %q is not one this arm knows; give skip-upper, or nothing", cfg.Fault))
	case cfg.Fault != "" && cfg.Workload != "sensor-batch":
		errs = append(errs, fmt.Errorf("fault %s breaks the sensor-batch transform; the %s workload has none", cfg.Fault, cfg.Workload))
	}
	return cfg, false, errors.Join(errs...)
}
