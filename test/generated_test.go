// Package test holds the checks that span the whole repository.
package test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestOpenAPIServerIsFresh regenerates the server from openapi.yaml and
// fails when the committed api.gen.go differs: the spec is the source of
// truth, and the generated file must never drift from it.
func TestOpenAPIServerIsFresh(t *testing.T) {
	root := repoRoot(t)
	out := filepath.Join(t.TempDir(), "api.gen.go")
	cmd := exec.Command("go", "tool", "oapi-codegen", "-config", "oapi-codegen.yaml", "-o", out, "../../openapi.yaml")
	cmd.Dir = filepath.Join(root, "adapters", "httpapi")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("oapi-codegen: %v\n%s", err, b)
	}
	fresh, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile(filepath.Join(root, "adapters", "httpapi", "api.gen.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fresh, committed) {
		t.Fatal("adapters/httpapi/api.gen.go is stale: run `make generate` (go generate ./...) and commit the result")
	}
}

// TestWireGenIsFresh asks wire whether app/compose/wire_gen.go matches the injectors.
func TestWireGenIsFresh(t *testing.T) {
	cmd := exec.Command("go", "tool", "wire", "diff", "./app/compose")
	cmd.Dir = repoRoot(t)
	b, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(b)) != 0 {
		t.Fatalf("app/compose/wire_gen.go is stale (run `make generate` and commit the result): %v\n%s", err, b)
	}
}
