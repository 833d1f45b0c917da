package report

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
)

// value formats v for a reader according to its unit: rates and counts with
// SI prefixes, bytes with binary ones, cores and ratios as decimals.
func value(v float64, unit string) string {
	switch {
	case unit == "bytes":
		return iec(v)
	case unit == "cores":
		return fmt.Sprintf("%.2f", v)
	case unit == "ratio":
		return fmt.Sprintf("%.3f", v)
	case unit == "s":
		return seconds(v)
	default: // rows/s, msg/s, bytes/s, count, rows/s/core
		return si(v)
	}
}

// si writes v with three significant digits and a k/M/G suffix: 2.66M.
func si(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e9:
		return sig3(v/1e9) + "G"
	case a >= 1e6:
		return sig3(v/1e6) + "M"
	case a >= 1e3:
		return sig3(v/1e3) + "k"
	case a == math.Trunc(a):
		return fmt.Sprintf("%.0f", v)
	}
	return sig3(v)
}

func sig3(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// iec writes a byte count with a binary prefix: 96.0 MiB.
func iec(v float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for math.Abs(v) >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%.0f B", v)
	}
	return fmt.Sprintf("%.1f %s", v, units[i])
}

func seconds(v float64) string {
	if v >= 120 {
		return fmt.Sprintf("%.1f min", v/60)
	}
	return fmt.Sprintf("%.2f s", v)
}

func percent(f float64) string { return fmt.Sprintf("%.1f%%", f*100) }

// statText renders a stat as "median [min–max]", or the median alone when
// there was one run.
func statText(s *Stat) string {
	if s == nil {
		return "–"
	}
	if s.N == 1 || s.Min == s.Max {
		return value(s.Median, s.Unit)
	}
	return fmt.Sprintf("%s [%s–%s]", value(s.Median, s.Unit), value(s.Min, s.Unit), value(s.Max, s.Unit))
}

// medianText renders only the median of a stat, or a dash.
func medianText(s *Stat) string {
	if s == nil {
		return "–"
	}
	return value(s.Median, s.Unit)
}

// pair renders "arm / data plane" medians, the two C8 figures side by side.
func pair(total, dataPlane *Stat) string {
	return medianText(total) + " / " + medianText(dataPlane)
}

func rankText(a *Arm) string {
	if a.Rank == 0 {
		return "–"
	}
	if a.Tied {
		return fmt.Sprintf("=%d", a.Rank)
	}
	return fmt.Sprint(a.Rank)
}

func runsText(a *Arm) string {
	if a.Measured == a.Runs {
		return fmt.Sprint(a.Runs)
	}
	return fmt.Sprintf("%d/%d", a.Measured, a.Runs)
}

func knobsText(k map[string]any) string {
	if len(k) == 0 {
		return ""
	}
	parts := make([]string, 0, len(k))
	for _, name := range slices.Sorted(maps.Keys(k)) {
		parts = append(parts, fmt.Sprintf("%s=%v", name, k[name]))
	}
	return strings.Join(parts, " ")
}

func sectionTitle(s *Section) string {
	return fmt.Sprintf("%s · %s · env %s · harness %d · workload %s · dataset %s · %s messages", s.ID, s.Env, short(s.EnvDigest), s.HarnessVersion, orNone(s.Workload), s.DatasetVersion, human(float64(s.Messages)))
}

// jointTitle names a joint section: the section of spatec's runs it ranks
// with the reference harness's, and their common conditions.
func jointTitle(s *Section) string {
	return fmt.Sprintf("%s · %s ranked with the reference harness's runs · %s · workload %s · dataset %s · %s messages",
		s.ID, s.Joint.Section, s.Env, orNone(s.Workload), s.DatasetVersion, human(float64(s.Messages)))
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
