package harness

import (
	"fmt"
	"strings"
)

// Page writes docs/harness.md's tables from the account: a table a
// section, a row a fact, each row saying how spatec accounts for it.
// The page's prose before the first section is intro, kept as given.
func Page(intro string, facts Facts, a *Accounts, res Result) string {
	var b strings.Builder
	b.WriteString(strings.TrimRight(intro, "\n"))
	fmt.Fprintf(&b, "\n\n<!-- Written by `go test ./harness -run TestHarnessPage -update` from harness/facts.tsv (the harness at %s) and harness/accounts.txt; edit those, not the tables. -->\n", short(facts.Commit))
	rows := map[string][]Row{}
	for _, r := range res.Rows {
		rows[r.Fact.Arm+" "+r.Fact.File] = append(rows[r.Fact.Arm+" "+r.Fact.File], r)
	}
	kinds := map[string]map[Kind]int{}
	for _, r := range res.Rows {
		if kinds[r.Fact.Arm] == nil {
			kinds[r.Fact.Arm] = map[Kind]int{}
		}
		kinds[r.Fact.Arm][r.Entry.Kind]++
	}
	arm := "\x00"
	for _, s := range a.Sections {
		if s.Arm != arm {
			arm = s.Arm
			k := kinds[arm]
			fmt.Fprintf(&b, "\n## %s\n\n%d settings of the harness: %d equal, %d the same effect spelt otherwise, %d declared deviations, %d no setting of the run.\n",
				armTitle(arm), k[Equal]+k[Same]+k[Deviation]+k[Outside], k[Equal], k[Same], k[Deviation], k[Outside])
		}
		title := s.Title
		if title == "" {
			title = "`" + s.File + "`"
		}
		fmt.Fprintf(&b, "\n### %s\n\nThe harness's `%s`", title, s.File)
		if s.Place != "" {
			fmt.Fprintf(&b, "; spatec's `%s` unless a row says otherwise", s.Place)
		}
		b.WriteString(".\n\n| harness | value | spatec | account |\n|---|---|---|---|\n")
		for _, r := range rows[s.Arm+" "+s.File] {
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", cell(r.Fact.Key), value(r), spatecCell(r), account(r))
		}
	}
	if len(a.Additions) > 0 {
		b.WriteString("\n## What spatec adds\n\nSettings spatec's plans make that the harness's files do not, each with why.\n\n| arm | place | key | why |\n|---|---|---|---|\n")
		for _, ad := range a.Additions {
			fmt.Fprintf(&b, "| %s | `%s` | `%s` | %s |\n", ad.Arm, ad.Place, cell(ad.Key), cell(ad.Why))
		}
	}
	return b.String()
}

func short(commit string) string {
	if len(commit) > 7 {
		return commit[:7]
	}
	return commit
}

// armTitles are the page's section titles, by the harness's arm ids.
var armTitles = map[string]string{
	"":                        "The workload, the host, the prefill and the toolchain",
	"flink":                   "Flink",
	"vector":                  "Vector",
	"clickhouse-kafka-engine": "ClickHouse's Kafka engine",
	"spate":                   "spate",
	"kafka-connect":           "Kafka Connect",
	"redpanda-connect":        "Redpanda Connect",
}

func armTitle(arm string) string {
	if t, ok := armTitles[arm]; ok {
		return t
	}
	return arm
}

// cell keeps a value inside a table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 120 {
		s = s[:117] + "…"
	}
	return s
}

func value(r Row) string {
	v := "`" + cell(r.Fact.Value) + "`"
	if r.Resolved != r.Fact.Value {
		v += " (runs as `" + cell(r.Resolved) + "`)"
	}
	return v
}

func spatecCell(r Row) string {
	e := r.Entry
	switch e.Kind {
	case Equal, Same:
		return fmt.Sprintf("`%s` = `%s` in `%s`", cell(r.SpatecKey), cell(r.Spatec), e.Place)
	case Deviation:
		return "deviation `" + e.Value + "`"
	}
	return "—"
}

func account(r Row) string {
	e := r.Entry
	switch e.Kind {
	case Equal:
		if e.Why != "" {
			return "equal: " + cell(e.Why)
		}
		return "equal"
	case Same:
		return "same effect: " + cell(e.Why)
	case Deviation:
		return "declared: " + cell(e.Why)
	}
	return "not a setting of the run: " + cell(e.Why)
}
