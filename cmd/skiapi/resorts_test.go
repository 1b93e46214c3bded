package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skidata/skidata/app/compose"
	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/test/dynamotest"
	"github.com/skidata/skidata/test/pgtest"
)

// durableStoreFlags are the flags of every store `skiapi resorts` must
// serve, each on tables or a schema of its own: PostgreSQL and each
// DynamoDB model, whose tables exist (the stack, or `skiapi tables create`).
func durableStoreFlags(t *testing.T) map[string][]string {
	t.Helper()
	stores := map[string][]string{
		"postgres": {"--store", "postgres", "--database-url", pgtest.URL(t), "--db-schema", pgtest.Schema(t, "resorts")},
	}
	endpoint := dynamotest.EndpointOrStart(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	for _, d := range compose.StoreDrivers {
		if d.Tables == nil {
			continue // no tables to create: not a DynamoDB model
		}
		store := d.Name
		flags := []string{"--store", store, "--dynamo-region", dynamotest.Region, "--dynamo-endpoint", endpoint, "--dynamo-table-prefix", dynamotest.Prefix(t) + store + "-"}
		if code, _, errOut := skiapi(append([]string{"tables", "create"}, flags...)...); code != 0 {
			t.Fatalf("tables create %s: exit %d: %s", store, code, errOut)
		}
		stores[store] = flags
	}
	return stores
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestResortsPutImportListOnEveryDurableStore: an operator registers a
// resort, renames it (its seasons stay), imports a CSV file with a quoted
// name holding a comma and a byte-order mark, and lists them, on
// PostgreSQL and each DynamoDB model; running put or import again changes
// nothing and says so, and what list prints, import reads back unchanged.
func TestResortsPutImportListOnEveryDurableStore(t *testing.T) {
	for store, flags := range durableStoreFlags(t) {
		t.Run(store, func(t *testing.T) {
			run := func(want string, args ...string) string {
				t.Helper()
				code, out, errOut := skiapi(append(args, flags...)...)
				if code != 0 || !strings.Contains(out, want) {
					t.Fatalf("skiapi %s: exit %d, stdout %q, stderr %q; want 0 and %q", strings.Join(args, " "), code, out, errOut, want)
				}
				return out
			}
			run("1 added, 0 renamed, 0 unchanged; the store holds 1 resorts", "resorts", "put", "--id", "7", "--name", "Mont Ours")
			run("0 added, 0 renamed, 1 unchanged; the store holds 1 resorts", "resorts", "put", "--id", "7", "--name", "Mont Ours")

			// A season registered meanwhile (POST /resorts/7/seasons) survives a rename.
			cfg, err := compose.ParseConfig(newFlagSet(nil), flags)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			st, closeStore, err := compose.OpenStore(ctx, compose.Deps{Config: cfg})
			if err != nil {
				t.Fatal(err)
			}
			err = st.Resorts.AddSeason(ctx, 7, domain.MustSeason("2026"))
			closeStore()
			if err != nil {
				t.Fatal(err)
			}
			run("0 added, 1 renamed, 0 unchanged", "resorts", "put", "--id", "7", "--name", "  Mont Ours et Sapins ")

			file := writeFile(t, "resorts.csv", "\ufeffid,name\n3,\"Les Arcs, Bourg-Saint-Maurice\"\n7,Mont Ours et Sapins\n12,Zermatt\n")
			run("2 added, 0 renamed, 1 unchanged; the store holds 3 resorts", "resorts", "import", file)
			run("0 added, 0 renamed, 3 unchanged; the store holds 3 resorts", "resorts", "import", file)

			want := "id,name,seasons\n3,\"Les Arcs, Bourg-Saint-Maurice\",\n7,Mont Ours et Sapins,2026\n12,Zermatt,\n"
			listed := run("", "resorts", "list")
			if listed != want {
				t.Errorf("resorts list printed\n%s\nwant\n%s", listed, want)
			}
			run("0 added, 0 renamed, 3 unchanged", "resorts", "import", writeFile(t, "listed.csv", listed))
		})
	}
}

// TestResortsRefuseBadInputAndWriteNothing: a file with one bad row is
// refused whole, naming the line and why, before any row is written; a put
// without a valid id or name, and a store that keeps nothing, are refused
// too. Each exits 2, as a usage error.
func TestResortsRefuseBadInputAndWriteNothing(t *testing.T) {
	flags := []string{"--store", "postgres", "--database-url", pgtest.URL(t), "--db-schema", pgtest.Schema(t, "resorts")}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"import", writeFile(t, "a.csv", "id,name\n1,Good\n0,Zero\n")}, "line 3: resortID must be a positive integer, got 0"},
		{[]string{"import", writeFile(t, "b.csv", "id,name\n1,Good\n2,   \n")}, "line 3: resort 2 needs a name"},
		{[]string{"import", writeFile(t, "c.csv", "id,name\n1,Good\nx,Bad\n")}, `line 3: id "x" is not a whole number`},
		{[]string{"import", writeFile(t, "d.csv", "id,name\n1,Good\n1,Again\n")}, "line 3: resort 1 is already on line 2"},
		{[]string{"import", writeFile(t, "e.csv", "name,id\nGood,1\n")}, `line 1: header "name,id"; want id,name`},
		{[]string{"import", writeFile(t, "f.csv", "id,name\n1,Good\n2\n")}, "wrong number of fields"},
		{[]string{"import", writeFile(t, "g.csv", "id,name\n4294967297,Wraps\n")}, "resortID 4294967297 is out of range"},
		{[]string{"import", writeFile(t, "h.csv", "")}, "empty; want a header row id,name"},
		{[]string{"import", filepath.Join(t.TempDir(), "missing.csv")}, "no such file"},
		{[]string{"import"}, "resorts import needs the CSV file first"},
		{[]string{"put", "--name", "No id"}, "resortID must be a positive integer, got 0"},
		{[]string{"put", "--id", "5"}, "resort 5 needs a name"},
	} {
		code, _, errOut := skiapi(append(append([]string{"resorts"}, c.args...), flags...)...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("skiapi resorts %s: exit %d, stderr %q; want 2 and %q", strings.Join(c.args, " "), code, errOut, c.want)
		}
	}
	if code, out, errOut := skiapi(append([]string{"resorts", "list"}, flags...)...); code != 0 || out != "id,name,seasons\n" {
		t.Errorf("resorts list after the refused commands: exit %d, stdout %q, stderr %q; want no resort written", code, out, errOut)
	}
	for _, sub := range []string{"list", "put --id 1 --name X"} {
		code, _, errOut := skiapi(append([]string{"resorts"}, strings.Fields(sub)...)...)
		if code != 2 || !strings.Contains(errOut, "--store memory keeps nothing") {
			t.Errorf("skiapi resorts %s with the memory store: exit %d, %q; want 2 saying memory keeps nothing", sub, code, errOut)
		}
	}
}
