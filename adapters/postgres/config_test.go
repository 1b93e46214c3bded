package postgres

import (
	"strings"
	"testing"
	"time"
)

func TestMaskURLHidesPasswords(t *testing.T) {
	cases := []struct{ in, want string }{
		{"postgres://skier:s3cret@db.example:5432/ski?sslmode=disable", "postgres://skier:xxxxx@db.example:5432/ski?sslmode=disable"},
		{"postgresql://skier:p%40ss@db/ski", "postgresql://skier:xxxxx@db/ski"},
		{"postgres://postgres@127.0.0.1:5432/test?sslmode=disable", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"},
		{"postgres://db/ski?user=skier&password=s3cret", "postgres://db/ski?user=skier&password=xxxxx"},
		{"host=db user=skier password=s3cret dbname=ski", "host=db user=skier password=xxxxx dbname=ski"},
		{"host=db password='s3 cret' dbname=ski", "host=db password=xxxxx dbname=ski"},
		{"host=db dbname=ski", "host=db dbname=ski"},
		// Not parseable as a URL (bad port), but the password must still go.
		{"postgres://skier:s3cret@db:notaport/ski", "postgres://skier:xxxxx@db:notaport/ski"},
	}
	for _, c := range cases {
		got := MaskURL(c.in)
		if got != c.want {
			t.Errorf("MaskURL(%q) = %q; want %q", c.in, got, c.want)
		}
		if strings.Contains(got, "s3cret") || strings.Contains(got, "s3 cret") || strings.Contains(got, "p%40ss") {
			t.Errorf("MaskURL(%q) = %q still shows the password", c.in, got)
		}
	}
}

func TestConfigSetsPoolAndSessionKnobs(t *testing.T) {
	pc, err := Config{
		URL:              "postgres://postgres@127.0.0.1:5432/test",
		MaxConns:         7,
		StatementTimeout: 1500 * time.Millisecond,
		ConnectTimeout:   2 * time.Second,
		Schema:           "Ski Data",
	}.poolConfig()
	if err != nil {
		t.Fatal(err)
	}
	if pc.MaxConns != 7 {
		t.Errorf("MaxConns = %d; want 7", pc.MaxConns)
	}
	if pc.ConnConfig.ConnectTimeout != 2*time.Second {
		t.Errorf("ConnectTimeout = %v; want 2s", pc.ConnConfig.ConnectTimeout)
	}
	if got := pc.ConnConfig.RuntimeParams["statement_timeout"]; got != "1500" {
		t.Errorf("statement_timeout = %q; want 1500 (ms)", got)
	}
	if got := pc.ConnConfig.RuntimeParams["search_path"]; got != `"Ski Data"` {
		t.Errorf("search_path = %q; want the quoted schema", got)
	}

	def, err := Config{URL: "postgres://postgres@127.0.0.1:5432/test"}.poolConfig()
	if err != nil {
		t.Fatal(err)
	}
	if def.ConnConfig.ConnectTimeout != DefaultConnectTimeout {
		t.Errorf("default ConnectTimeout = %v; want %v", def.ConnConfig.ConnectTimeout, DefaultConnectTimeout)
	}
	if _, set := def.ConnConfig.RuntimeParams["search_path"]; set {
		t.Error("search_path set although no schema was given")
	}
}
