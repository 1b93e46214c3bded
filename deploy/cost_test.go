package deploy

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestOperationsCostTableCoversBothQueuesAtBothTrafficLevels: the cost
// table of docs/operations.md prices the stack with each queue (SQS,
// Amazon MQ) at each traffic level (a small resort, the national chain):
// every line has a figure (or "—", not billed with that queue) in each of
// the four columns and says where its price comes from (a numbered source
// the page lists, or another page of docs/), and each column's total is
// the sum of its lines.
func TestOperationsCostTableCoversBothQueuesAtBothTrafficLevels(t *testing.T) {
	_, section, ok := strings.Cut(readOperations(t), "\n## Cost\n")
	if !ok {
		t.Fatal(`docs/operations.md has no "## Cost"`)
	}
	if next := strings.Index(section, "\n## "); next >= 0 {
		section = section[:next]
	}
	var rows [][]string
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, "|") {
			rows = append(rows, strings.Split(strings.Trim(line, "|"), "|"))
		} else if len(rows) > 0 {
			break // the first table only
		}
	}
	if len(rows) < 4 {
		t.Fatalf("the Cost section's first table has %d rows", len(rows))
	}
	cell := func(s string) string { return strings.Trim(strings.TrimSpace(s), "*") }
	wantCols := []string{"small, SQS", "small, Amazon MQ", "chain, SQS", "chain, Amazon MQ"}
	header := rows[0]
	if len(header) != 6 {
		t.Fatalf("cost table header %q; want line, how it is counted, and %q", header, wantCols)
	}
	for i, want := range wantCols {
		if got := cell(header[2+i]); got != want {
			t.Errorf("cost table column %d is %q; want %q", 3+i, got, want)
		}
	}
	sources := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^(\d+)\. `).FindAllStringSubmatch(section[strings.Index(section, "\nSources"):], -1) {
		sources[m[1]] = true
	}
	money := func(s string) (float64, bool) {
		s = strings.NewReplacer("≈", "", "$", "", ",", "", " ", "").Replace(cell(s))
		v, err := strconv.ParseFloat(s, 64)
		return v, err == nil
	}
	sums := make([]float64, 4)
	var total []string
	for _, r := range rows[2:] {
		if len(r) != 6 {
			t.Errorf("cost table row %q has %d cells; want 6", r, len(r))
			continue
		}
		name := cell(r[0])
		if name == "total a month" {
			total = r[2:]
			continue
		}
		refs := regexp.MustCompile(`\[(\d+)\]`).FindAllStringSubmatch(r[1], -1)
		if len(refs) == 0 && !strings.Contains(r[1], "docs/") {
			t.Errorf("cost line %q gives no source for its price: %q", name, strings.TrimSpace(r[1]))
		}
		for _, ref := range refs {
			if !sources[ref[1]] {
				t.Errorf("cost line %q cites [%s], which the Sources list lacks", name, ref[1])
			}
		}
		for i, c := range r[2:] {
			if cell(c) == "—" {
				continue
			}
			v, ok := money(c)
			if !ok {
				t.Errorf("cost line %q, column %q: %q is not a figure or —", name, wantCols[i], strings.TrimSpace(c))
			}
			sums[i] += v
		}
	}
	if total == nil {
		t.Fatal(`the cost table has no "total a month" row`)
	}
	for i, c := range total {
		v, ok := money(c)
		if !ok || v-sums[i] > 1 || sums[i]-v > 1 {
			t.Errorf("cost total %q for %s; its lines add up to $%.2f", strings.TrimSpace(c), wantCols[i], sums[i])
		}
	}
}
