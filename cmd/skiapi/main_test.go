package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/skidata/skidata/test/pgtest"
)

// TestMigrateThenSeedKeepsExistingSeasons runs the two one-shot commands
// against a fresh schema: migrate reports the version, seed loads the ten
// demo resorts and, run again, says it loaded nothing new and keeps a
// season added in between.
func TestMigrateThenSeedKeepsExistingSeasons(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := pgtest.Admin(t)
	schema := pgtest.Schema(t, "cmd")
	flags := []string{"--store", "postgres", "--database-url", pgtest.URL(t), "--db-schema", schema}
	cmd := func(name string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := run(append([]string{name}, flags...), &out, &errOut); code != 0 {
			t.Fatalf("skiapi %s exited %d: %s", name, code, errOut.String())
		}
		return out.String()
	}

	if got, want := cmd("migrate"), fmt.Sprintf("schema at version %d", latestMigration(t)); !strings.Contains(got, want) {
		t.Errorf("migrate printed %q; want %q, the version reached", got, want)
	}
	if got, want := cmd("seed"), "demo resorts loaded: 10 resorts and 20 seasons added; the store holds 10 resorts\n"; got != want {
		t.Errorf("seed printed %q; want %q", got, want)
	}
	seasons := pgx.Identifier{schema, "resort_seasons"}.Sanitize()
	if _, err := admin.Exec(ctx, `INSERT INTO `+seasons+` (resort_id, season_id) VALUES (1, 2031)`); err != nil {
		t.Fatal(err)
	}
	if got, want := cmd("seed"), "demo resorts already loaded, nothing changed; the store holds 10 resorts\n"; got != want {
		t.Errorf("a second seed printed %q; want %q", got, want)
	}
	var kept bool
	if err := admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+seasons+` WHERE resort_id = 1 AND season_id = 2031)`).Scan(&kept); err != nil || !kept {
		t.Errorf("season 2031 of resort 1 after a second seed: present=%v err=%v; want kept", kept, err)
	}
}

// latestMigration is the highest version among the PostgreSQL adapter's
// migration files (NNNN_what.sql).
func latestMigration(t *testing.T) int {
	t.Helper()
	files, err := filepath.Glob("../../adapters/postgres/migrations/*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("no migration files found: %v", err)
	}
	latest := 0
	for _, f := range files {
		prefix, _, _ := strings.Cut(filepath.Base(f), "_")
		v, err := strconv.Atoi(prefix)
		if err != nil {
			t.Fatalf("migration %s: %v", f, err)
		}
		latest = max(latest, v)
	}
	return latest
}

// TestPostgresWithoutURLIsRefused: no default database, and the message says
// which flag is missing.
func TestPostgresWithoutURLIsRefused(t *testing.T) {
	t.Setenv("SKI_DATABASE_URL", "")
	for _, name := range []string{"serve", "migrate", "seed"} {
		var out, errOut bytes.Buffer
		code := run([]string{name, "--store", "postgres"}, &out, &errOut)
		if code != 2 || !strings.Contains(errOut.String(), "--database-url") {
			t.Errorf("skiapi %s --store postgres: exit %d, stderr %q; want 2 naming --database-url", name, code, errOut.String())
		}
	}
}

// TestMigrateRefusesMemoryStore: there is nothing to migrate in memory.
func TestMigrateRefusesMemoryStore(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"migrate"}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "--store postgres") {
		t.Errorf("skiapi migrate: exit %d, stderr %q; want 1 pointing at --store postgres", code, errOut.String())
	}
}
func TestHelpListsEveryFlagWithItsEnvironmentVariable(t *testing.T) {
	var out, errs bytes.Buffer
	if code := run([]string{"--help"}, &out, &errs); code != 0 {
		t.Fatalf("--help exit code %d", code)
	}
	for _, want := range []string{"--listen", "SKI_LISTEN", "--store", "SKI_STORE", "--queue", "--batch-size", "SKI_BATCH_SIZE", "--batch-linger", "--queue-capacity", "--role"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("help does not mention %s:\n%s", want, out.String())
		}
	}
}

// TestHelpAskedForGoesToStdout: help that was asked for is the command's
// output (`skiapi help | less` shows it), exit 0, nothing on stderr; a
// usage mistake stays on stderr with exit 2.
func TestHelpAskedForGoesToStdout(t *testing.T) {
	for _, args := range [][]string{
		{"help"}, {"--help"}, {"-h"}, {"serve", "--help"}, {"--store", "postgres", "--help"},
		{"migrate", "--help"}, {"seed", "-help"}, {"config", "--help"}, {"version", "--help"},
		{"tables", "--help"}, {"tables", "create", "--help"}, {"dlq", "list", "--help"},
		{"resorts", "--help"}, {"resorts", "put", "--help"},
	} {
		var out, errs bytes.Buffer
		code := run(args, &out, &errs)
		if code != 0 || !strings.HasPrefix(out.String(), "Usage: skiapi") || errs.Len() != 0 {
			t.Errorf("skiapi %s: exit %d, stdout %.40q, stderr %q; want 0, the usage on stdout, nothing on stderr", strings.Join(args, " "), code, out.String(), errs.String())
		}
	}
	for _, args := range [][]string{{"--no-such-flag"}, {"tables"}, {"dlq", "purge"}} {
		var out, errs bytes.Buffer
		code := run(args, &out, &errs)
		if code != 2 || out.Len() != 0 || errs.Len() == 0 {
			t.Errorf("skiapi %s: exit %d, stdout %q, stderr %q; want 2 and the reason on stderr only", strings.Join(args, " "), code, out.String(), errs.String())
		}
	}
}

func TestBadUsageExitsTwoWithReason(t *testing.T) {
	var out, errs bytes.Buffer
	if code := run([]string{"--store", "floppy"}, &out, &errs); code != 2 {
		t.Errorf("exit code %d; want 2", code)
	}
	if !strings.Contains(errs.String(), `--store "floppy" is not one of`) {
		t.Errorf("stderr %q does not say why", errs.String())
	}
	errs.Reset()
	if code := run([]string{"frobnicate"}, &out, &errs); code != 2 || !strings.Contains(errs.String(), `unknown command "frobnicate"`) {
		t.Errorf("unknown command: exit %d, stderr %q", code, errs.String())
	}
}

func TestVersion(t *testing.T) {
	var out, errs bytes.Buffer
	if code := run([]string{"version"}, &out, &errs); code != 0 || !strings.HasPrefix(out.String(), "skiapi ") {
		t.Errorf("version: exit %d, out %q", code, out.String())
	}
}

// TestUsageErrorsAreOneLineWithASuggestion: a bad flag, a bad value or an
// unknown command gets one line naming it as the user typed it (--flag),
// with a suggestion where there is a close match, and no usage dump.
func TestUsageErrorsAreOneLineWithASuggestion(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--port", "9090"}, []string{"--port", "not a flag", "did you mean --listen 127.0.0.1:9090?"}},
		{[]string{"--bach-size", "10"}, []string{"--bach-size", "did you mean --batch-size?"}},
		{[]string{"--amqp-publish-linger", "10ms"}, []string{"--amqp-publish-linger", "not a flag", "did you mean --publish-linger 10ms?"}},
		{[]string{"--batch-size", "ten"}, []string{`--batch-size "ten"`, "whole number"}},
		{[]string{"--batch-linger", "5"}, []string{`--batch-linger "5"`, "duration", "5ms"}},
		{[]string{"--listen", "8080"}, []string{`--listen "8080"`, "did you mean --listen 127.0.0.1:8080?"}},
		{[]string{"--listen"}, []string{"--listen", "needs a value"}},
		{[]string{"migrat"}, []string{`unknown command "migrat"`, `did you mean "migrate"?`}},
		{[]string{"--store", "postgress"}, []string{`--store "postgress"`, `did you mean "postgres"?`}},
	} {
		var out, errs bytes.Buffer
		code := run(c.args, &out, &errs)
		msg := errs.String()
		if code != 2 {
			t.Errorf("%v: exit %d; want 2", c.args, code)
		}
		if n := strings.Count(msg, "\n"); n != 1 {
			t.Errorf("%v: %d lines on stderr; want one:\n%s", c.args, n, msg)
		}
		if strings.Contains(msg, " -") && !strings.Contains(msg, " --") {
			t.Errorf("%v: %q names a flag in single-dash form", c.args, msg)
		}
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%v: stderr %q does not say %q", c.args, msg, w)
			}
		}
	}
}
