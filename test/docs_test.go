package test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// mdName is a Markdown file named in the code: README.md, docs/dynamodb.md,
// ../docs/operations.md.
var mdName = regexp.MustCompile(`[\w./-]*\w\.md\b`)

// TestEveryDocumentTheCodeNamesExists: a comment or a test that points to
// a Markdown file names one that exists, from the repository root or from
// the file's own directory (adapters/dynamo pointed to an architecture
// document at the root, where there is none).
func TestEveryDocumentTheCodeNamesExists(t *testing.T) {
	root := repoRoot(t)
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, name := range mdName.FindAllString(string(src), -1) {
			checked++
			if !exists(filepath.Join(root, name)) && !exists(filepath.Join(filepath.Dir(path), name)) {
				rel, _ := filepath.Rel(root, path)
				t.Errorf("%s names %s, which does not exist", rel, name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 20 {
		t.Fatalf("only %d names of documents found in the code; the test is not reading it", checked)
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// TestBenchmarksIsAReport: docs/benchmarks.md stays a report of the runs at
// the tip (under 300 lines), not a diary of every round; git keeps the
// superseded runs.
func TestBenchmarksIsAReport(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(repoRoot(t), filepath.FromSlash("docs/benchmarks.md")))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(src), "\n"); n >= 300 {
		t.Errorf("docs/benchmarks.md has %d lines; keep it under 300", n)
	}
}
