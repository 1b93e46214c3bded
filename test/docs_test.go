package test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
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

// mdLink is a Markdown link or image: [text](target) or ![alt](target).
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocLinksResolve: every relative link of the README and of docs/
// points at a file that exists, and a link to a heading of a Markdown page
// (README.md#tests, or #tests on the same page) at a heading that page has,
// by GitHub's anchor for it. Links inside code are not links.
func TestDocLinksResolve(t *testing.T) {
	root := repoRoot(t)
	anchors := map[string]map[string]bool{}
	anchorsOf := func(page string) map[string]bool {
		if a, ok := anchors[page]; ok {
			return a
		}
		b, err := os.ReadFile(page)
		if err != nil {
			return nil
		}
		anchors[page] = headingAnchors(string(b))
		return anchors[page]
	}
	checked := 0
	for _, doc := range docPages(t) {
		for _, target := range linkTargets(readDoc(t, doc)) {
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			checked++
			path, anchor, _ := strings.Cut(target, "#")
			file := filepath.Join(root, doc)
			if path != "" {
				file = filepath.Join(root, filepath.Dir(doc), path)
			}
			if !exists(file) {
				t.Errorf("%s links to %s, which does not exist", doc, target)
				continue
			}
			if anchor != "" && strings.HasSuffix(file, ".md") && !anchorsOf(file)[anchor] {
				t.Errorf("%s links to %s: %s has no heading whose anchor is #%s", doc, target, path, anchor)
			}
		}
	}
	if checked < 30 {
		t.Fatalf("only %d relative links found in the README and docs/; the test is not reading them", checked)
	}
}

// linkTargets are the targets of the links of a Markdown page, leaving out
// fenced blocks and inline code.
func linkTargets(text string) []string {
	var out []string
	inFence := false
	inlineCode := regexp.MustCompile("`[^`]*`")
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		for _, m := range mdLink.FindAllStringSubmatch(inlineCode.ReplaceAllString(line, "``"), -1) {
			out = append(out, m[1])
		}
	}
	return out
}

// headingAnchors are the anchors GitHub gives a page's headings: lower
// case, punctuation other than - and _ dropped, spaces turned to -, and a
// repeated anchor numbered -1, -2, ...
func headingAnchors(text string) map[string]bool {
	out := map[string]bool{}
	inFence := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		if inFence || !strings.HasPrefix(line, "#") {
			continue
		}
		heading := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(heading) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		anchor := b.String()
		for i := 1; out[anchor]; i++ {
			anchor = fmt.Sprintf("%s-%d", b.String(), i)
		}
		out[anchor] = true
	}
	return out
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
