package postgres

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/skidata/skidata/adapters/redact"
)

// DefaultConnectTimeout bounds each connection attempt when neither Config
// nor the URL (connect_timeout) says otherwise: a database that is down
// should be reported in seconds, not after the kernel's TCP timeout.
const DefaultConnectTimeout = 5 * time.Second

// Config says where the database is and how the pool behaves.
type Config struct {
	// URL is a libpq connection string, URL or keyword/value form, e.g.
	// postgres://postgres@127.0.0.1:5432/test?sslmode=disable.
	URL string
	// MaxConns caps the pool; 0 keeps pgx's default (max of 4 and the
	// number of CPUs) or pool_max_conns from the URL.
	MaxConns int32
	// StatementTimeout is the server-side limit on every statement; 0
	// keeps the server's setting. Migrations are exempt.
	StatementTimeout time.Duration
	// ConnectTimeout bounds each connection attempt; 0 means the URL's
	// connect_timeout, or DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// Schema places the tables in this schema (created if missing) by
	// setting search_path on every connection; "" uses the server's
	// search_path (normally public).
	Schema string
}

// poolConfig turns Config into pgx's pool configuration.
func (c Config) poolConfig() (*pgxpool.Config, error) {
	if strings.TrimSpace(c.URL) == "" {
		return nil, fmt.Errorf("no database URL given")
	}
	pc, err := pgxpool.ParseConfig(c.URL)
	if err != nil {
		return nil, err
	}
	if c.MaxConns > 0 {
		pc.MaxConns = c.MaxConns
	}
	switch {
	case c.ConnectTimeout > 0:
		pc.ConnConfig.ConnectTimeout = c.ConnectTimeout
	case pc.ConnConfig.ConnectTimeout == 0:
		pc.ConnConfig.ConnectTimeout = DefaultConnectTimeout
	}
	if c.StatementTimeout > 0 {
		pc.ConnConfig.RuntimeParams["statement_timeout"] = strconv.FormatInt(c.StatementTimeout.Milliseconds(), 10)
	}
	if c.Schema != "" {
		pc.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{c.Schema}.Sanitize()
	}
	return pc, nil
}

// MaskURL returns the connection string with any password masked, so that
// it can be logged or put in an error message.
func MaskURL(conn string) string { return redact.Secrets(conn) }
