package main

import (
	"fmt"
	"slices"

	"spatec.dev/spatec/harness"
	"spatec.dev/spatec/runs/report"
	sensorbatch "spatec.dev/spatec/workloads/sensor-batch"
)

// publishedRepository names the public harness's repository for a reader.
const publishedRepository = "spate-etl/benchmark"

// showsPublished says whether a report shows the harness's published
// figures: a report of the harness's host, asked for by --env or holding
// spatec's runs there.
func showsPublished(env string, rep *report.Report) bool {
	if env != "" {
		return env == harness.PublishedEnv
	}
	return slices.ContainsFunc(rep.Sections, func(s *report.Section) bool { return s.Env == harness.PublishedEnv })
}

// publishedBeside is the harness's published figures of its host (as
// committed in harness/published.tsv and built into spatec) beside each of
// spatec's plans there, read from the tree at dir: each plan with the
// figures of the harness's variant that runs what it runs
// (harness.SpatecVariant), then any published variant spatec plans none of.
func publishedBeside(dir string) (*report.Published, error) {
	pub, err := harness.PublishedFigures()
	if err != nil {
		return nil, err
	}
	t, err := loadTree(dir)
	if err != nil {
		return nil, fmt.Errorf("reading spatec's plans on %s: %w", pub.Env, err)
	}
	out := &report.Published{Source: publishedRepository, Commit: pub.Commit, Env: pub.Env}
	used := map[int]bool{}
	for _, entrant := range t.Entrants() {
		if !t.Supports(entrant, pub.Env) {
			continue
		}
		variants, def := t.Variants(entrant)
		for _, v := range variants {
			row := &report.PublishedRow{Entrant: entrant, Variant: v, Default: v == def}
			for i, f := range pub.Figures {
				if sv, ok := harness.SpatecVariant(f.Arm, f.Variant); ok && f.Arm == entrant && sv == v {
					setFigures(row, f)
					used[i] = true
				}
			}
			out.Rows = append(out.Rows, row)
		}
	}
	for i, f := range pub.Figures {
		if !used[i] {
			row := &report.PublishedRow{Entrant: f.Arm}
			setFigures(row, f)
			out.Rows = append(out.Rows, row)
		}
	}
	for _, f := range pub.Figures {
		for _, m := range f.Months {
			if !slices.Contains(out.Months, m) {
				out.Months = append(out.Months, m)
			}
		}
		for _, c := range f.Commits {
			if !slices.Contains(out.Commits, c) {
				out.Commits = append(out.Commits, c)
			}
		}
		// The figures are set beside spatec's runs of the corpus the
		// harness measured on, in spatec's name for it.
		ds, ok := sensorbatch.SpatecLabel(f.Dataset)
		if !ok {
			return nil, fmt.Errorf("the harness's %s:%s was measured on dataset %s, which spatec does not generate", f.Arm, f.Variant, f.Dataset)
		}
		if out.Dataset != "" && (ds != out.Dataset || f.Batches != out.Messages) {
			return nil, fmt.Errorf("the harness's figures are of two corpora (%s of %d messages, %s of %d)", out.Dataset, out.Messages, ds, f.Batches)
		}
		out.Dataset, out.Messages = ds, f.Batches
	}
	slices.Sort(out.Months)
	slices.Sort(out.Commits)
	return out, nil
}

func setFigures(row *report.PublishedRow, f harness.Figures) {
	row.PublishedVariant, row.Version, row.N = f.Variant, f.Version, f.N
	row.RowsPerS, row.RowsPerSMin, row.RowsPerSMax = f.RowsPerS, f.RowsPerSMin, f.RowsPerSMax
	row.Cores, row.DataPlaneCores, row.PeakAnon = f.Cores, f.DataPlaneCores, f.Peak
}
