package sample

import (
	"context"
	"fmt"
	"syscall"
	"time"
)

// MeasureOverhead runs a sampler over targets for dur at period and returns
// what it cost: the process's CPU time (user + system, all threads, from
// getrusage) over the wall time, as a fraction of one core. The target is
// under 0.01 at 100 ms over 4 containers, measured over 30 s. Nothing else
// should run in the process meanwhile, since all of it is counted.
func MeasureOverhead(ctx context.Context, targets []Target, period, dur time.Duration) (float64, error) {
	s, err := New(targets, WithPeriod(period))
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, dur)
	defer cancel()
	before, err := processCPU()
	if err != nil {
		return 0, err
	}
	start := time.Now()
	if _, err := s.Run(ctx); err != nil {
		return 0, fmt.Errorf("measuring the sampler's overhead: %w", err)
	}
	wall := time.Since(start)
	after, err := processCPU()
	if err != nil {
		return 0, err
	}
	return float64(after-before) / float64(wall), nil
}

func processCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("reading the process's CPU time: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
