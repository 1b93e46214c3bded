package test

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

// The dependency rule of docs/architecture.md, checked on what the
// packages really import (go list -deps), so that no arrow points outward:
// domain imports nothing of ours, ports only domain, the use cases (app)
// only domain, ports and general-purpose libraries, and an adapter never
// another adapter.

const module = "github.com/skidata/skidata"

type listedPackage struct {
	ImportPath string
	Imports    []string
	Deps       []string
	Standard   bool
}

// goList returns the packages matching pattern, with their direct imports
// and every dependency.
func goList(t *testing.T, pattern string) []listedPackage {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps=false", "-json", pattern)
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pattern, err)
	}
	var pkgs []listedPackage
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p listedPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("decode go list: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// nonStandard is the dependencies that are not in the standard library.
func nonStandard(t *testing.T, pkg string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", pkg)
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	var deps []string
	for _, line := range strings.Fields(string(out)) {
		if line != pkg {
			deps = append(deps, line)
		}
	}
	return deps
}

func TestDomainImportsOnlyTheStandardLibrary(t *testing.T) {
	if deps := nonStandard(t, module+"/domain"); len(deps) > 0 {
		t.Errorf("domain depends on %v; it may import the standard library only", deps)
	}
}

func TestPortsImportOnlyDomain(t *testing.T) {
	for _, d := range nonStandard(t, module+"/ports") {
		if d != module+"/domain" {
			t.Errorf("ports depends on %s; it may import domain only", d)
		}
	}
}

// The use cases lean on general-purpose libraries for algorithms (retry
// backoff, a token bucket, an LRU), never on an adapter or a technology's SDK.
func TestUseCasesImportNoAdapterOrSDK(t *testing.T) {
	allowed := []string{module + "/domain", module + "/ports", "github.com/cenkalti/backoff/", "golang.org/x/time/rate", "github.com/hashicorp/golang-lru/"}
	for _, d := range nonStandard(t, module+"/app") {
		ok := false
		for _, a := range allowed {
			if d == a || strings.HasPrefix(d, a) {
				ok = true
			}
		}
		if !ok {
			t.Errorf("app (the use cases) depends on %s; it may import domain, ports and general-purpose libraries only (composition lives in app/compose)", d)
		}
	}
}

// An adapter imports domain, ports and its own client libraries; never
// another adapter, the use cases or the composition. adapters/redact is
// not an adapter but the one secret-masking helper every adapter shares,
// and adapters/standin the one launcher of the Node.js stand-ins that the
// simulations (dynamosim, sqssim) share.
func TestAdaptersDoNotImportEachOther(t *testing.T) {
	for _, p := range goList(t, "./adapters/...") {
		self := strings.TrimPrefix(p.ImportPath, module+"/adapters/")
		self, _, _ = strings.Cut(self, "/")
		for _, imp := range p.Imports {
			switch {
			case strings.HasPrefix(imp, module+"/app"):
				t.Errorf("%s imports %s: adapters may not import the use cases or the composition", p.ImportPath, imp)
			case strings.HasPrefix(imp, module+"/adapters/"):
				other := strings.TrimPrefix(imp, module+"/adapters/")
				other, _, _ = strings.Cut(other, "/")
				if other != self && other != "redact" && other != "standin" {
					t.Errorf("%s imports %s: an adapter may not import another adapter", p.ImportPath, imp)
				}
			}
		}
	}
}

// A shipped binary carries no test package: what skibench needs from the
// DynamoDB simulation lives in adapters/dynamo/dynamosim, which the tests
// use too.
func TestShippedBinariesImportNoTestPackage(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "./cmd/...")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps ./cmd/...: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, module+"/test/") || p == module+"/test" {
			t.Errorf("a binary under cmd/ depends on %s, a test package", p)
		}
	}
}

// The service has one way in: net/http and the routes oapi-codegen
// generates (docs/architecture.md). fasthttp is skiload's client only; a
// second server in skiapi would be a second path to every handler.
func TestTheServiceServesHTTPWithNetHTTPOnly(t *testing.T) {
	for _, p := range nonStandard(t, module+"/cmd/skiapi") {
		if strings.HasPrefix(p, "github.com/valyala/fasthttp") {
			t.Errorf("cmd/skiapi depends on %s; the service serves HTTP with net/http only", p)
		}
	}
}
