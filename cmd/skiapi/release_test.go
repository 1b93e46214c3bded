package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestVersionIsSetByLdflags builds skiapi with the -X main.version=...
// that `make release` passes and runs `skiapi version`: if the variable
// moved or was renamed, -X would silently set nothing and every release
// would call itself "dev". (Plain build flags otherwise, so the build cache
// of other builds serves it; `make release` checks its own binary too.)
func TestVersionIsSetByLdflags(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go tool is needed to build the release binary: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "skiapi")
	build := exec.Command(goBin, "build", "-ldflags", "-X main.version=v9.8.7-test", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("skiapi version: %v", err)
	}
	if got := strings.TrimSpace(string(out)); got != "skiapi v9.8.7-test" {
		t.Errorf("skiapi version printed %q; want %q", got, "skiapi v9.8.7-test")
	}
}
