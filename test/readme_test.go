package test

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/skidata/skidata/app/compose"
)

// readDoc is the text of a document, by its path from the repository root.
func readDoc(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// readReadme is README.md's text.
func readReadme(t *testing.T) string { return readDoc(t, "README.md") }

// docPages are the README and every page of docs/, from the repository root.
func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(repoRoot(t), "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := []string{"README.md"}
	for _, p := range pages {
		out = append(out, filepath.Join("docs", filepath.Base(p)))
	}
	return out
}

// A fence is a fenced block of a Markdown page: its info string (sh,
// text, ...), its lines, and what the page says just before it.
type fence struct {
	info   string
	lines  []string
	before string // the page's text between the previous block and this one
}

// fences are the page's top-level fenced blocks (a fence at the start of
// a line; those indented inside a list item are left out), in order.
func fences(text string) []fence {
	var out []fence
	var cur *fence
	var prose strings.Builder
	for _, line := range strings.Split(text, "\n") {
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			cur = &fence{info: strings.TrimSpace(strings.TrimPrefix(line, "```")), before: prose.String()}
			prose.Reset()
		case cur != nil && line == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.lines = append(cur.lines, line)
		default:
			prose.WriteString(line + "\n")
		}
	}
	return out
}

var (
	programsOnce sync.Once
	programsDir  string
	programsErr  error
)

// programs builds skiapi, skiload and skibench from this tree once per
// test binary and returns the directory holding them.
func programs(t *testing.T) string {
	t.Helper()
	programsOnce.Do(func() {
		programsDir, programsErr = os.MkdirTemp("", "skidata-programs-")
		if programsErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", programsDir+string(os.PathSeparator), "./cmd/skiapi", "./cmd/skiload", "./cmd/skibench")
		cmd.Dir = repoRoot(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			programsErr = &buildError{err: err, out: out}
		}
	})
	if programsErr != nil {
		t.Fatalf("go build ./cmd/...: %v", programsErr)
	}
	return programsDir
}

type buildError struct {
	err error
	out []byte
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + string(e.out) }

// helpFlag is one flag as `skiapi --help` prints it.
type helpFlag struct{ env, def string }

// skiapiHelpFlags runs `skiapi --help` and returns its flags by name.
func skiapiHelpFlags(t *testing.T) map[string]helpFlag {
	t.Helper()
	cmd := exec.Command(filepath.Join(programs(t), "skiapi"), "--help")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("skiapi --help: %v\n%s", err, stderr.String())
	}
	nameLine := regexp.MustCompile(`^  --([a-z0-9-]+)( \w+)?\s*$`)
	usageEnd := regexp.MustCompile(`\(default "(.*)", env (SKI_[A-Z0-9_]+)\)$`)
	flags := map[string]helpFlag{}
	sc := bufio.NewScanner(&stdout)
	name := ""
	for sc.Scan() {
		line := sc.Text()
		if m := nameLine.FindStringSubmatch(line); m != nil {
			name = m[1]
			continue
		}
		if name == "" {
			continue
		}
		m := usageEnd.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("skiapi --help: the usage of --%s does not end (default \"...\", env SKI_...): %q", name, line)
		}
		flags[name] = helpFlag{env: m[2], def: m[1]}
		name = ""
	}
	if len(flags) < 10 {
		t.Fatalf("skiapi --help listed only %d flags; this test no longer reads its output:\n%s", len(flags), stdout.String())
	}
	return flags
}

// tableCells splits a Markdown table row into its trimmed cells; an
// escaped pipe (\|) stays inside its cell.
func tableCells(row string) []string {
	const bar = "\x00"
	row = strings.ReplaceAll(strings.TrimSpace(row), `\|`, bar)
	row = strings.TrimSuffix(strings.TrimPrefix(row, "|"), "|")
	var cells []string
	for _, c := range strings.Split(row, "|") {
		cells = append(cells, strings.TrimSpace(strings.ReplaceAll(c, bar, `\|`)))
	}
	return cells
}

// tableRows returns the body rows of the first table of text whose header
// row is header, as cells.
func tableRows(t *testing.T, doc, text, header string) [][]string {
	t.Helper()
	_, table, ok := strings.Cut(text, "\n"+header+"\n")
	if !ok {
		t.Fatalf("%s has no table headed %q", doc, header)
	}
	table, _, _ = strings.Cut(table, "\n\n")
	var rows [][]string
	for _, line := range strings.Split(table, "\n")[1:] { // after |---|
		rows = append(rows, tableCells(line))
	}
	return rows
}

// TestReadmeIsAFrontDoor: README.md stays at most 200 lines, what a
// newcomer reads before a first success (what it is, quick start, modes,
// tests, endpoints); the reference lives in docs/.
func TestReadmeIsAFrontDoor(t *testing.T) {
	if n := strings.Count(readReadme(t), "\n"); n > 200 {
		t.Errorf("README.md has %d lines; keep it at most 200 and move the reference to docs/", n)
	}
}

const flagTableHeader = "| flag | variable | default | meaning |"

// TestFlagReferenceIsSkiapiHelp keeps docs/reference.md's flag table equal
// to what `skiapi --help` prints: every flag it lists has a row, no row
// names a flag it lacks, and each row gives the flag's variable and
// default as --help does (an empty default written "(empty)"). The values
// the ec2 profile gives are named in the default cell, "`v` with
// `--profile ec2`", and no other.
func TestFlagReferenceIsSkiapiHelp(t *testing.T) {
	help := skiapiHelpFlags(t)
	rows := tableRows(t, "docs/reference.md", readDoc(t, "docs/reference.md"), flagTableHeader)
	profile := compose.Profiles["ec2"].Defaults
	documented := map[string]bool{}
	flagCell := regexp.MustCompile("^`--([a-z0-9-]+)`$")
	profileMention := regexp.MustCompile("`([^`]*)` with `--profile ec2`")
	for _, cells := range rows {
		if len(cells) != 4 {
			t.Errorf("docs/reference.md: row %q does not have 4 cells", strings.Join(cells, " | "))
			continue
		}
		m := flagCell.FindStringSubmatch(cells[0])
		if m == nil {
			t.Errorf("docs/reference.md: a row's first cell is %q; want one flag, `--name`", cells[0])
			continue
		}
		name := m[1]
		if documented[name] {
			t.Errorf("docs/reference.md: --%s has two rows", name)
		}
		documented[name] = true
		h, ok := help[name]
		if !ok {
			t.Errorf("docs/reference.md documents --%s, which skiapi --help does not list", name)
			continue
		}
		if cells[1] != "`"+h.env+"`" {
			t.Errorf("docs/reference.md: --%s's variable is %s; skiapi --help says %s", name, cells[1], h.env)
		}
		wantDefault := "`" + h.def + "`"
		if h.def == "" {
			wantDefault = "(empty)"
		}
		if !strings.HasPrefix(cells[2], wantDefault) {
			t.Errorf("docs/reference.md: --%s's default is %q; skiapi --help says %s", name, cells[2], wantDefault)
		}
		var mentioned []string
		for _, pm := range profileMention.FindAllStringSubmatch(cells[2], -1) {
			mentioned = append(mentioned, pm[1])
		}
		if v, ok := profile[name]; ok {
			if !slices.Equal(mentioned, []string{v}) {
				t.Errorf("docs/reference.md: --%s's default cell says %q for --profile ec2; the profile gives `%s`", name, mentioned, v)
			}
		} else if len(mentioned) > 0 {
			t.Errorf("docs/reference.md: --%s's default cell names a --profile ec2 value (%q); the profile does not set it", name, mentioned)
		}
	}
	for name, h := range help {
		if !documented[name] {
			t.Errorf("docs/reference.md does not document --%s (%s), which skiapi --help lists", name, h.env)
		}
	}
}

// TestReadmeModesSayWhatA201Means: each row of the README's table of modes
// says what a 201 to a POSTed ride means there, as the registry decides
// it: confirmed by a durable queue; stored, when the in-process queue
// makes the POST wait for a durable store; queued otherwise (memory).
func TestReadmeModesSayWhatA201Means(t *testing.T) {
	rows := tableRows(t, "README.md", readReadme(t), "| mode | flags | a `201` means | how to run it |")
	storeFlag := regexp.MustCompile("`--store ([a-z0-9-]+)")
	queueFlag := regexp.MustCompile("`--queue ([a-z0-9-]+)`")
	checked := map[string]bool{}
	for _, cells := range rows {
		if len(cells) != 4 {
			t.Fatalf("README.md: modes row %q does not have 4 cells", strings.Join(cells, " | "))
		}
		cfg := compose.DefaultConfig()
		if m := storeFlag.FindStringSubmatch(cells[1]); m != nil {
			cfg.Store = m[1]
		}
		if m := queueFlag.FindStringSubmatch(cells[1]); m != nil {
			cfg.Queue = m[1]
		}
		if cells[1] != "none" && cfg.Store == compose.DefaultConfig().Store && cfg.Queue == compose.DefaultConfig().Queue {
			continue // roles, profiles: "as the queue's"
		}
		want := "queued"
		switch {
		case compose.QueueOf(cfg).Durable:
			want = "confirmed"
		case compose.StoreOf(cfg).Durable:
			want = "stored"
		}
		checked[want] = true
		if !strings.Contains(cells[2], "**"+want+"**") {
			t.Errorf("README.md: in the %s mode (--store %s --queue %s) a 201 means the ride is %s; the table says %q", cells[0], cfg.Store, cfg.Queue, want, cells[2])
		}
	}
	if len(checked) != 3 {
		t.Errorf("the README's modes table shows %d of the three meanings of a 201 (queued, stored, confirmed)", len(checked))
	}
}

// TestDocsSayWhatTheEC2ProfileSets: the README's and docs/operations.md's
// paragraphs on --profile ec2 name the store, the queue and the listen
// address the profile sets.
func TestDocsSayWhatTheEC2ProfileSets(t *testing.T) {
	profile := compose.Profiles["ec2"].Defaults
	for doc, opening := range map[string]string{
		"README.md":          "`--profile ec2` is the AWS layout",
		"docs/operations.md": "`--profile ec2` (or `SKI_PROFILE=ec2`) means",
	} {
		_, para, ok := strings.Cut(readDoc(t, doc), opening)
		if !ok {
			t.Errorf("%s has no paragraph opening %q", doc, opening)
			continue
		}
		para, _, _ = strings.Cut(para, "\n\n")
		for _, flag := range []string{"store", "queue", "listen"} {
			v := profile[flag]
			if !strings.Contains(para, "`"+v+"`") && !strings.Contains(para, "`--"+flag+" "+v+"`") {
				t.Errorf("%s's paragraph on --profile ec2 does not name its %s, `%s`:\n%s", doc, flag, v, para)
			}
		}
	}
}

// TestExamplesBindLoopback: the service takes writes unauthenticated, so no
// example outside the AWS runbook (docs/operations.md, where the ec2
// profile listens for the load balancer) binds anything but loopback, and
// a server an example starts on a port names its host.
func TestExamplesBindLoopback(t *testing.T) {
	everyInterface := regexp.MustCompile(`--listen[ =]:|--listen[ =]0\.0\.0\.0|--host[ =]0\.0\.0\.0|--listen[ =]\[::\]`)
	for _, doc := range docPages(t) {
		if doc == "docs/operations.md" {
			continue
		}
		for _, f := range fences(readDoc(t, doc)) {
			if f.info != "sh" {
				continue
			}
			for _, line := range f.lines {
				if everyInterface.MatchString(line) {
					t.Errorf("%s: an example binds every interface: %s", doc, line)
				}
				if strings.Contains(line, "dynalite") && strings.Contains(line, "--port") && !strings.Contains(line, "--host 127.0.0.1") {
					t.Errorf("%s: dynalite started without --host 127.0.0.1 (it listens on every interface otherwise): %s", doc, line)
				}
			}
		}
	}
}

// TestExamplesExportNothing: a block that runs sets no SKI_ or AWS_
// variable in the reader's shell, so a later block, on this page or
// another, runs in the mode it says and not in one an earlier block left
// behind (a roles block once unset the variables it knew of and left the
// DynamoDB section's). Blocks marked "# needs" (AWS) and the AWS runbook
// are left out: they are run where those variables belong.
func TestExamplesExportNothing(t *testing.T) {
	export := regexp.MustCompile(`\bexport\s+(SKI_|AWS_)`)
	for _, doc := range docPages(t) {
		if doc == "docs/operations.md" {
			continue
		}
		for _, f := range fences(readDoc(t, doc)) {
			if f.info != "sh" || (len(f.lines) > 0 && strings.HasPrefix(f.lines[0], notRunMarker)) {
				continue
			}
			for _, line := range f.lines {
				if export.MatchString(line) {
					t.Errorf("%s: an example exports a variable later blocks would inherit: %s", doc, line)
				}
			}
		}
	}
}
