// Command spatec-ceiling measures the infrastructure's ceilings (C12) from
// inside the run's network: spatec starts it in a container beside the
// broker and ClickHouse, where it reaches them by the names the arms use.
// It says each step on stderr and prints the figures as one JSON line on
// stdout, last.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"spatec.dev/spatec/exec/ceiling"
)

// version is what -version prints.
const version = "0.1.0"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// Exit codes: 0 measured, 1 the measurement failed, 2 bad flags.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("spatec-ceiling", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var t ceiling.Target
	brokers := fs.String("brokers", "", "broker bootstrap addresses, comma-separated")
	fs.StringVar(&t.ClickHouse, "clickhouse", "", "ClickHouse native address (host:port)")
	fs.StringVar(&t.User, "user", "default", "ClickHouse user")
	fs.StringVar(&t.Password, "password", "", "ClickHouse password")
	fs.StringVar(&t.Database, "database", "spatec", "the environment's database; the scratch table goes beside it")
	workload := fs.String("workload", "", "the workload, as the plan's JSON has it (its topic is prefilled)")
	fs.Int64Var(&t.Messages, "messages", 0, "messages in the dataset")
	showVersion := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *showVersion {
		fmt.Fprintf(stdout, "spatec-ceiling %s\n", version)
		return 0
	}
	var missing []string
	for _, f := range []struct{ name, value string }{
		{"-brokers", *brokers}, {"-clickhouse", t.ClickHouse}, {"-workload", *workload},
	} {
		if f.value == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		fmt.Fprintf(stderr, "spatec-ceiling: %s required\n", strings.Join(missing, ", "))
		return 2
	}
	if err := json.Unmarshal([]byte(*workload), &t.Workload); err != nil {
		fmt.Fprintf(stderr, "spatec-ceiling: -workload: %v\n", err)
		return 2
	}
	if t.Messages <= 0 {
		fmt.Fprintf(stderr, "spatec-ceiling: -messages is %d; give the dataset's size\n", t.Messages)
		return 2
	}
	t.Brokers = strings.Split(*brokers, ",")
	say := func(format string, args ...any) { fmt.Fprintf(stderr, "spatec-ceiling: "+format+"\n", args...) }
	f, err := ceiling.Measure(ctx, t, say)
	if err != nil {
		fmt.Fprintf(stderr, "spatec-ceiling: %v\n", err)
		return 1
	}
	if err := json.NewEncoder(stdout).Encode(f); err != nil {
		fmt.Fprintf(stderr, "spatec-ceiling: %v\n", err)
		return 1
	}
	return 0
}
