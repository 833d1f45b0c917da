package schema

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// FormatCPUs renders a CPU count without trailing zeros: "32", "0.5".
func FormatCPUs(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// FormatBytes renders a byte count the way the CUE files write it:
// "96 GiB", "512 MiB", else bytes.
func FormatBytes(n int64) string {
	const kib, mib, gib = 1 << 10, 1 << 20, 1 << 30
	switch {
	case n != 0 && n%gib == 0:
		return fmt.Sprintf("%d GiB", n/gib)
	case n != 0 && n%mib == 0:
		return fmt.Sprintf("%d MiB", n/mib)
	case n != 0 && n%kib == 0:
		return fmt.Sprintf("%d KiB", n/kib)
	}
	return fmt.Sprintf("%d B", n)
}

// BudgetSummary spells out the C4 host arithmetic for CPUs or memory, e.g.
// "3 + 32 + 32 leaves 29 of 96 cores for the driver, sampler and OS":
// broker, ClickHouse, any registry of its own, envelope, then any control
// plane and reserve. A control plane inside the reserve is said there,
// with what the reserve keeps beside it: "3 + 16 + 6 + 7 (reserve, holding
// the control plane's 1) leaves 0 of 32 cores, and the reserve 6, for the
// driver, sampler and OS".
func (p *Plan) BudgetSummary(cpus bool) string {
	b := p.Budget.Memory
	f := func(v float64) string { return FormatBytes(int64(v)) }
	of := func(s Service) float64 { return float64(s.Memory) }
	unit := ""
	if cpus {
		b, f = p.Budget.CPUs, FormatCPUs
		of = func(s Service) float64 { return s.CPUs }
		unit = " cores"
	}
	var terms []string
	for _, ks := range p.Env.Infra.Keyed() {
		terms = append(terms, f(of(ks.Service)))
	}
	terms = append(terms, f(b.Envelope))
	if b.ControlPlaneInReserve && b.ControlPlane > 0 {
		terms = append(terms, fmt.Sprintf("%s (reserve, holding the control plane's %s)", f(b.Reserve), f(b.ControlPlane)))
		// CPUs come in hundredths (C15): the difference is one too.
		rest := math.Round((b.Reserve-b.ControlPlane)*100) / 100
		if !cpus {
			rest = b.Reserve - b.ControlPlane
		}
		return fmt.Sprintf("%s leaves %s of %s%s, and the reserve %s, for the driver, sampler and OS",
			strings.Join(terms, " + "), f(b.Left), f(b.Host), unit, f(rest))
	}
	if b.ControlPlane > 0 {
		terms = append(terms, f(b.ControlPlane)+" (control plane)")
	}
	if b.Reserve > 0 {
		terms = append(terms, f(b.Reserve)+" (reserve)")
	}
	return fmt.Sprintf("%s leaves %s of %s%s for the driver, sampler and OS",
		strings.Join(terms, " + "), f(b.Left), f(b.Host), unit)
}
