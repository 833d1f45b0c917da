// Command burn is spatec's own load program for testing the executor against
// a real engine. It burns a set number of cores' worth of CPU, holds a set
// amount of anonymous and of shared memory, and can exit early with a chosen
// code, so tests can check caps, measurements and failure reporting with a
// workload whose behaviour is known exactly.
//
// With -gclog it also stands in for a JVM's logging: where JAVA_TOOL_OPTIONS
// asks for a GC log file (-Xlog:…:file=PATH:…), it writes a short G1 log
// with known figures there, and where they also ask for the final flags in
// a file (-XX:+LogVMOutput -XX:LogFile=PATH -XX:+PrintFlagsFinal), a few
// lines of the flags table there, so tests can check that the executor
// asks for both and reads them back.
//
// It is built statically (CGO_ENABLED=0) into a FROM scratch image, so it
// relies on nothing but the kernel.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"spatec.dev/spatec/exec/gclog"
	"spatec.dev/spatec/exec/jvmflags"
)

// Version is what -version prints; tests pin it to check version reading.
const Version = "1.0.0"

// dutyPeriod is the slice of wall time in which each worker is busy for its
// share and sleeps for the rest. It is short next to the 100 ms CFS period,
// so an uncapped burn looks steady to a sampler.
const dutyPeriod = 10 * time.Millisecond

type options struct {
	cpu     float64
	anon    int64
	shm     int64
	hold    time.Duration
	exit    int
	version bool
	gclog   bool
}

// gcLog is the G1 log -gclog writes: a 512 MiB heap, committed at most
// 300 MiB, and at most 64 MiB occupied after a collection, with compressed
// oops in the mode such a heap takes from the default heap base.
const gcLog = `[0.010s][info][gc] Using G1
[0.011s][info][gc,init] Compressed Oops: Enabled (32-bit)
[0.011s][info][gc,init] Heap Max Capacity: 512M
[0.500s][info][gc] GC(0) Pause Young (Normal) (G1 Evacuation Pause) 100M->40M(256M) 3.000ms
[0.900s][info][gc] GC(1) Pause Full (System.gc()) 200M->64M(300M) 9.000ms
`

// flagsTable is what of the final flags -gclog writes, as JDK 17 prints
// them for that heap at the default alignment and heap base.
const flagsTable = `[Global flags]
   size_t HeapBaseMinAddress                       = 2147483648                             {pd product} {default}
   size_t MaxHeapSize                              = 536870912                                 {product} {command line}
     intx ObjectAlignmentInBytes                   = 8                              {product lp64_product} {default}
     bool UseCompressedOops                        = true                           {product lp64_product} {ergonomic}
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	opts, err := parseFlags(args, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "burn: %v\n", err)
		return 2
	}
	if opts.version {
		fmt.Fprintf(stdout, "burn %s\n", Version)
		return 0
	}

	// As PID 1 in a container, SIGTERM is ignored unless handled: handle it
	// so `docker stop` ends burn at once instead of after the grace period.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	anon, err := touchAnon(opts.anon)
	if err != nil {
		fmt.Fprintf(stderr, "burn: %v\n", err)
		return 1
	}
	shm, err := touchShm(opts.shm)
	if err != nil {
		fmt.Fprintf(stderr, "burn: %v\n", err)
		return 1
	}
	if opts.gclog {
		if err := writeGCLog(os.Getenv("JAVA_TOOL_OPTIONS")); err != nil {
			fmt.Fprintf(stderr, "burn: %v\n", err)
			return 1
		}
	}
	fmt.Fprintf(stdout, "burn ready: cpu=%g anon=%d shm=%d\n", opts.cpu, opts.anon, opts.shm)

	startBurn(ctx, opts.cpu)

	if opts.hold > 0 {
		select {
		case <-ctx.Done():
		case <-time.After(opts.hold):
		}
	} else if opts.exit < 0 {
		<-ctx.Done()
	}

	// The mappings must stay live until here: the memory is the point.
	runtime.KeepAlive(anon)
	runtime.KeepAlive(shm)

	if opts.exit >= 0 {
		fmt.Fprintf(stderr, "burn: exiting with code %d as asked\n", opts.exit)
		return opts.exit
	}
	return 0
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var opts options
	var anon, shm string
	fs := flag.NewFlagSet("burn", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Float64Var(&opts.cpu, "cpu", 0, "cores' worth of CPU to burn (e.g. 0.5); above a CPU cap it saturates the cap")
	fs.StringVar(&anon, "anon", "0", "anonymous memory to allocate and touch (e.g. 64MiB)")
	fs.StringVar(&shm, "shm", "0", "shared memory (memfd) to allocate and touch (e.g. 32MiB)")
	fs.DurationVar(&opts.hold, "hold", 0, "run this long, then exit (0: until SIGTERM, or at once with -exit)")
	fs.IntVar(&opts.exit, "exit", -1, "exit with this code after -hold, printing a line to stderr first")
	fs.BoolVar(&opts.version, "version", false, "print the version and exit")
	fs.BoolVar(&opts.gclog, "gclog", false, "write a G1 log where JAVA_TOOL_OPTIONS' -Xlog asks for a file, and final flags where their -XX:LogFile does, as a JVM would")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	if fs.NArg() > 0 {
		return options{}, fmt.Errorf("unexpected arguments %q; burn takes flags only", fs.Args())
	}
	if opts.cpu < 0 || math.IsNaN(opts.cpu) || math.IsInf(opts.cpu, 0) {
		return options{}, fmt.Errorf("-cpu %v: want a finite number of cores, 0 or more", opts.cpu)
	}
	if opts.exit > 255 {
		return options{}, fmt.Errorf("-exit %d: an exit code is 0 to 255", opts.exit)
	}
	var err error
	if opts.anon, err = parseSize(anon); err != nil {
		return options{}, fmt.Errorf("-anon: %w", err)
	}
	if opts.shm, err = parseSize(shm); err != nil {
		return options{}, fmt.Errorf("-shm: %w", err)
	}
	return opts, nil
}

// writeGCLog writes gcLog to the file javaToolOptions' -Xlog option names,
// and flagsTable to the one its -XX:LogFile option names, if they ask for
// the final flags.
func writeGCLog(javaToolOptions string) error {
	path, err := gclog.File(javaToolOptions)
	if err != nil {
		return fmt.Errorf("-gclog: %w", err)
	}
	if err := writeFile(path, gcLog); err != nil {
		return fmt.Errorf("-gclog: %w", err)
	}
	if path, err := jvmflags.File(strings.Fields(javaToolOptions)); err == nil {
		if err := writeFile(path, flagsTable); err != nil {
			return fmt.Errorf("-gclog: %w", err)
		}
	}
	return nil
}

// writeFile writes text to path, making its directory.
func writeFile(path, text string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(text), 0o644)
}

// parseSize reads a byte count written as a plain integer or with a binary
// unit: 512, 64KiB, 64MiB, 1GiB.
func parseSize(s string) (int64, error) {
	units := []struct {
		suffix string
		factor int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"B", 1}}
	num, factor := s, int64(1)
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			num, factor = strings.TrimSuffix(s, u.suffix), u.factor
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/factor {
		return 0, fmt.Errorf("size %q: want a non-negative integer with an optional unit B, KiB, MiB or GiB (e.g. 64MiB)", s)
	}
	return n * factor, nil
}

// touchAnon maps private anonymous memory and writes every page, so the
// kernel charges all of it to the cgroup's anonymous (rss) memory.
func touchAnon(size int64) ([]byte, error) {
	if size == 0 {
		return nil, nil
	}
	mem, err := unix.Mmap(-1, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("mapping %d bytes of anonymous memory: %w", size, err)
	}
	touch(mem)
	return mem, nil
}

// touchShm creates a memfd, sizes it and maps it shared, then writes every
// page: the kernel charges the pages to shmem, the way a JVM on ZGC keeps its
// heap, which is why spatec counts shmem with anon (contract C7).
func touchShm(size int64) ([]byte, error) {
	if size == 0 {
		return nil, nil
	}
	fd, err := unix.MemfdCreate("burn-shm", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("creating a memfd: %w", err)
	}
	// The mapping keeps the memory alive after the descriptor closes.
	defer unix.Close(fd)
	if err := unix.Ftruncate(fd, size); err != nil {
		return nil, fmt.Errorf("sizing the memfd to %d bytes: %w", size, err)
	}
	mem, err := unix.Mmap(fd, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mapping %d bytes of the memfd: %w", size, err)
	}
	touch(mem)
	return mem, nil
}

func touch(mem []byte) {
	page := os.Getpagesize()
	for i := 0; i < len(mem); i += page {
		mem[i] = 1
	}
}

// startBurn starts ceil(cores) workers, each busy for cores/workers of every
// duty period. Under a CPU cap lower than cores the workers simply run into
// the CFS quota, so the cap is what a sampler measures.
func startBurn(ctx context.Context, cores float64) {
	if cores == 0 {
		return
	}
	workers := int(math.Ceil(cores))
	busy := time.Duration(float64(dutyPeriod) * cores / float64(workers))
	for range workers {
		go spin(ctx, busy)
	}
}

func spin(ctx context.Context, busy time.Duration) {
	for ctx.Err() == nil {
		start := time.Now()
		for time.Since(start) < busy {
			// Spin: this loop is the CPU load.
		}
		if rest := dutyPeriod - time.Since(start); rest > 0 {
			time.Sleep(rest)
		}
	}
}
