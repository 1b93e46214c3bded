package test

import (
	"strings"
	"testing"

	"github.com/skidata/skidata/app/compose"
)

// TestReferenceNamesEveryRegisteredAdapter: docs/reference.md's flag table
// names every store, queue and cache of the one registry (app/compose's
// registry.go), so an adapter added there is documented or this fails.
func TestReferenceNamesEveryRegisteredAdapter(t *testing.T) {
	readme := readDoc(t, "docs/reference.md")
	rows := map[string]string{}
	for _, line := range strings.Split(readme, "\n") {
		for _, flag := range []string{"store", "queue", "cache"} {
			if strings.HasPrefix(line, "| `--"+flag+"` |") {
				rows[flag] = line
			}
		}
	}
	for flag, names := range map[string][]string{"store": compose.StoreNames(), "queue": compose.QueueNames(), "cache": compose.CacheNames()} {
		row, ok := rows[flag]
		if !ok {
			t.Errorf("docs/reference.md has no row for --%s", flag)
			continue
		}
		if len(names) == 0 {
			t.Errorf("the registry has no %s", flag)
		}
		for _, n := range names {
			if !strings.Contains(row, "`"+n+"`") {
				t.Errorf("docs/reference.md's --%s row does not name `%s`: %s", flag, n, row)
			}
		}
	}
}
