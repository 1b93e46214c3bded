// Package short proves the promise of `go test -short ./...` (make
// test-short): it passes on a machine with nothing but Go installed, every
// test that needs more skipping and naming what it needs (test/needs), while
// without -short the same harnesses fail, naming the missing server. Its
// test runs the go command on the whole tree, so it runs under make test and
// skips under -short.
package short
