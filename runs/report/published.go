package report

import (
	"bufio"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"spatec.dev/spatec/runs/record"
)

// Published is what the public harness published of its runs on one of
// spatec's environments, set beside spatec's plans there: the figures a
// run of each plan on that host is expected to reproduce. They are
// summaries of its records, not records: never ranked, never in a
// section; spatec's runs of the same corpus are set beside them for a
// reader to compare.
type Published struct {
	// Source is the public harness's repository, Commit the commit of it
	// the figures were read at.
	Source string `json:"source"`
	Commit string `json:"commit"`
	Env    string `json:"env"`
	// Dataset (spatec's label) and Messages are the corpus the figures
	// were measured on; a section of spatec's runs of the same corpus
	// and size is set beside them.
	Dataset  string `json:"dataset,omitempty"`
	Messages int64  `json:"messages,omitempty"`
	// Months are the record files read, Commits the publisher's commits
	// the runs were made at.
	Months  []string        `json:"months"`
	Commits []string        `json:"commits"`
	Rows    []*PublishedRow `json:"rows"`
}

// PublishedRow is one of spatec's plans on the environment with the
// figures published of the variant that runs what it runs, or a published
// variant spatec plans none of.
type PublishedRow struct {
	// Entrant and Variant are spatec's plan's; Variant is empty where
	// spatec plans nothing the published variant runs. Default says the
	// plan's variant is the entrant's default, which a record may leave
	// unnamed.
	Entrant string `json:"entrant"`
	Variant string `json:"variant,omitempty"`
	Default bool   `json:"default,omitempty"`
	// PublishedVariant is the publisher's name of the variant, empty
	// where it published none of this plan; the figures are then zero.
	PublishedVariant string `json:"published_variant,omitempty"`
	Version          string `json:"version,omitempty"`
	N                int    `json:"n,omitempty"`
	// RowsPerS (with its range) is over the publisher's window, the rate
	// spatec records as harness_rows_per_s.
	RowsPerS    float64 `json:"rows_per_s,omitempty"`
	RowsPerSMin float64 `json:"rows_per_s_min,omitempty"`
	RowsPerSMax float64 `json:"rows_per_s_max,omitempty"`
	// Cores and DataPlaneCores are medians of cores used, the arm's and
	// its data plane's (0 where not published); PeakAnon is the median
	// anon peak, the cgroup's anon alone, not spatec's anon+shmem.
	Cores          float64 `json:"cores_used,omitempty"`
	DataPlaneCores float64 `json:"data_plane_cores_used,omitempty"`
	PeakAnon       float64 `json:"peak_anon_bytes,omitempty"`
	// Spatec is spatec's runs of the plan on the same corpus and size, a
	// section each: its harness-window rate; set by SetPublished.
	Spatec []string `json:"spatec,omitempty"`
}

// Label names the row: spatec's plan, or the published variant spatec
// plans none of.
func (p *PublishedRow) Label() string {
	if p.Variant == "" {
		return p.Entrant + " (no plan of spatec's runs the published " + p.PublishedVariant + ")"
	}
	return p.Entrant + ":" + p.Variant
}

// SetPublished sets p beside the report: each row with the runs of its
// plan the report holds, a section of spatec's runs of p's environment and
// corpus each, by the rate the publisher's figures are of.
func (r *Report) SetPublished(p *Published) {
	for _, row := range p.Rows {
		row.Spatec = nil
		if row.Variant == "" {
			continue
		}
		for _, s := range r.Sections {
			if s.Env != p.Env || s.DatasetVersion != p.Dataset || s.Messages != p.Messages {
				continue
			}
			for _, a := range s.Arms {
				if a.Entrant != row.Entrant || !(a.Variant == row.Variant || a.Variant == "" && row.Default) || a.Study != "" {
					continue
				}
				row.Spatec = append(row.Spatec, fmt.Sprintf("%s %s: %s (n %d)", s.ID, a.Label, statText(a.Metrics[ShownBeside]), a.Measured))
			}
		}
	}
	r.Published = p
}

// Title is the published figures' heading.
func (p *Published) Title() string {
	return fmt.Sprintf("The public harness's published figures · %s · %s at commit %s", p.Env, p.Source, p.Commit)
}

// Subtitle says what the figures are and what they are not.
func (p *Published) Subtitle() string {
	return fmt.Sprintf("medians of its records of %s (runs at its commits %s), on dataset %s of %s messages: "+
		"what a run of spatec's plan there is expected to reproduce. Rows/s over the harness's window "+
		"(spatec's harness_rows_per_s, set beside from spatec's runs of the same corpus and size); "+
		"the peak is the cgroup's anon alone, not spatec's anon+shmem; never ranked",
		strings.Join(p.Months, ", "), strings.Join(p.Commits, ", "), p.Dataset, human(float64(p.Messages)))
}

// Cells gives a row's cells for the text and HTML tables: the
// published variant, its version, rows/s median [min–max], n, cores arm /
// data plane, anon peak and spatec's runs.
func (p *PublishedRow) Cells() []string {
	spatec := "no run"
	if len(p.Spatec) > 0 {
		spatec = strings.Join(p.Spatec, "; ")
	}
	if p.PublishedVariant == "" {
		return []string{"none published", "–", "–", "–", "–", "–", spatec}
	}
	dp := "–"
	if p.DataPlaneCores > 0 {
		dp = value(p.DataPlaneCores, "cores")
	}
	return []string{p.PublishedVariant, p.Version,
		fmt.Sprintf("%s [%s–%s]", si(p.RowsPerS), si(p.RowsPerSMin), si(p.RowsPerSMax)), fmt.Sprint(p.N),
		value(p.Cores, "cores") + " / " + dp, iec(p.PeakAnon), spatec}
}

// publishedHeads are the published table's column heads, after the plan.
var publishedHeads = []string{"PUBLISHED VARIANT", "VERSION", "ROWS/S MEDIAN [MIN–MAX]", "N", "CORES ARM / DP", "ANON PEAK", "SPATEC'S RUNS, HARNESS-WINDOW ROWS/S"}

// writePublishedTable writes the published figures beside spatec's plans.
func (r *Report) writePublishedTable(bw *bufio.Writer) error {
	p := r.Published
	if p == nil {
		return nil
	}
	fmt.Fprintf(bw, "\n%s\n%s\n\n", p.Title(), p.Subtitle())
	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SPATEC PLAN\t"+strings.Join(publishedHeads, "\t"))
	for _, row := range p.Rows {
		fmt.Fprintln(tw, strings.Join(slices.Concat([]string{row.Label()}, row.Cells()), "\t"))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing the published figures: %w", err)
	}
	return nil
}

// NoRecords is the report of an environment spatec has no records of yet:
// what is set beside it (SetPublished) stands alone.
func NoRecords(env string) *Report {
	return &Report{RankedBy: RankedBy, ShownBeside: ShownBeside, Ranking: Ranking, Env: env, Sections: []*Section{}, Problems: []record.Problem{}}
}
