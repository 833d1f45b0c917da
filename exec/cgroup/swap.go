package cgroup

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// SwapDevice is one active entry of /proc/swaps.
type SwapDevice struct {
	Name    string
	Type    string
	SizeKiB uint64
}

// Swaps lists the host's active swap areas from <Proc>/swaps.
func (f FS) Swaps() ([]SwapDevice, error) {
	file := filepath.Join(f.proc(), "swaps")
	fh, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", file, err)
	}
	defer fh.Close()
	var out []SwapDevice
	sc := bufio.NewScanner(fh)
	for line := 1; sc.Scan(); line++ {
		fields := strings.Fields(sc.Text())
		if line == 1 || len(fields) == 0 {
			continue // the header: Filename Type Size Used Priority
		}
		if len(fields) < 3 {
			return nil, fmt.Errorf("reading %s: line %d: expected \"<name> <type> <size> ...\", found %q", file, line, sc.Text())
		}
		size, err := strconv.ParseUint(fields[2], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("reading %s: line %d: size %q is not a number", file, line, fields[2])
		}
		// The kernel escapes spaces in names as \040.
		name := strings.ReplaceAll(fields[0], `\040`, " ")
		out = append(out, SwapDevice{Name: name, Type: fields[1], SizeKiB: size})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", file, err)
	}
	return out, nil
}

// CheckSwap enforces contract C5 on the host. With swap accounting the
// per-container swap limits are verified by Verify and nothing is left to
// check here. Without it a container's swap cannot be limited, so the host
// must have no active swap at all.
func CheckSwap(f FS, swapAccounting bool) error {
	if swapAccounting {
		return nil
	}
	swaps, err := f.Swaps()
	if err != nil {
		return fmt.Errorf("C5: the kernel has no swap accounting, so the host must have no swap, and whether it has any cannot be told: %w", err)
	}
	if len(swaps) == 0 {
		return nil
	}
	names := make([]string, len(swaps))
	for i, s := range swaps {
		names[i] = fmt.Sprintf("%s (%s, %d KiB)", s.Name, s.Type, s.SizeKiB)
	}
	return fmt.Errorf("C5: swap is active on this host (%s) and the kernel has no swap accounting, so containers could swap past their memory caps; "+
		"fix: run `swapoff -a` (and remove the swap from /etc/fstab), or enable swap accounting (boot with swapaccount=1, or use cgroup v2)",
		strings.Join(names, ", "))
}
