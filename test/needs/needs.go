// Package needs is how a test says what it needs beyond Go, so that the two
// ways of running the tests differ in one place:
//
//   - go test -short ./... runs only what Go alone can run (unit tests, the
//     contract suites on memory and in-process, the API suite in memory
//     mode) and passes on a machine with nothing but Go installed: a test
//     that needs a server, a program or root skips, saying which
//     ("skipped under -short: needs PostgreSQL").
//   - Without -short (make test) nothing here skips: the test goes on to use
//     what it needs and fails, naming the missing piece, when it is absent.
//
// The harnesses (pgtest, amqptest, dynamotest, sqstest, charttest, ...)
// call it before they touch their server, so a test that goes through a
// harness needs no call of its own. The set -short skips is the same on
// every machine: a test that needs PostgreSQL skips under -short even where
// PostgreSQL runs.
package needs

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// SkipPrefix begins every skip message of this package: what a run under
// -short prints for each test it left out.
const SkipPrefix = "skipped under -short: needs "

// Server skips t under -short, naming the server (or servers) it needs:
// "PostgreSQL", "RabbitMQ", "Redis", "dynalite (Node.js)". Without -short it
// returns: the caller then connects, and fails naming the server when it
// does not answer.
func Server(t testing.TB, names ...string) {
	t.Helper()
	if testing.Short() {
		t.Skip(SkipPrefix + strings.Join(names, " and "))
	}
}

// URL is how a test says it needs a server: under -short it skips t,
// naming it; otherwise it is the address in the environment variable env,
// or def when env is unset.
func URL(t testing.TB, server, env, def string) string {
	t.Helper()
	Server(t, server)
	if u := os.Getenv(env); u != "" {
		return u
	}
	return def
}

// Program returns the path of the program name, which Debian's package pkg
// provides. Under -short it skips t, naming the program; without -short a
// program missing from PATH fails t, naming the package to install.
func Program(t testing.TB, name, pkg string) string {
	t.Helper()
	if testing.Short() {
		t.Skip(SkipPrefix + name + " (" + pkg + ")")
	}
	path, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("this test needs %s, which is not on PATH: apt-get install %s (scripts/services.sh installs what make test needs)", name, pkg)
	}
	return path
}

// Programs is Program for several programs, each given as name or
// name:package (when the package's name differs); it skips naming them all.
func Programs(t testing.TB, programs ...string) {
	t.Helper()
	if testing.Short() {
		t.Skip(SkipPrefix + strings.Join(names(programs), ", "))
	}
	for _, p := range programs {
		name, pkg, ok := strings.Cut(p, ":")
		if !ok {
			pkg = name
		}
		Program(t, name, pkg)
	}
}

func names(programs []string) []string {
	out := make([]string, len(programs))
	for i, p := range programs {
		out[i], _, _ = strings.Cut(p, ":")
	}
	return out
}

// NPM skips t under -short, naming the npm package it reads files of and
// the directory whose package-lock.json pins it ("npm ci --prefix dir"
// installs it); without -short it returns, and the test fails naming the
// command when the files are missing.
func NPM(t testing.TB, pkg, dir string) {
	t.Helper()
	if testing.Short() {
		t.Skip(SkipPrefix + "the npm package " + pkg + " (npm ci --prefix " + dir + ")")
	}
}

// Root skips t under -short, saying it needs root for why; without -short
// a run as another user fails t.
func Root(t testing.TB, why string) {
	t.Helper()
	if testing.Short() {
		t.Skip(SkipPrefix + "root (" + why + ")")
	}
	if os.Geteuid() != 0 {
		t.Fatalf("this test needs root: %s", why)
	}
}
