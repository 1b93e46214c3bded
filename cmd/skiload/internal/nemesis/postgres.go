package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/skidata/skidata/cmd/skiload/internal/loadgen"
)

// server is a dependency a run starts for itself, in directories and on
// ports of its own; the processes reach it only through links.
type server interface {
	name() string
	addr() string
	// restartKind is the fault that restarts it, or "" when it has none.
	restartKind() string
	// restart stops it (how, drawn from rng, is the detail it returns),
	// waits down, starts it again and returns once it takes connections.
	restart(ctx context.Context, down time.Duration, rng *rand.Rand) (string, error)
}

// The fault kinds that restart a server.
const (
	DBRestart     = "db-restart"
	BrokerRestart = "broker-restart"
)

// postgresServer is a PostgreSQL instance of the run's own: initdb into a
// temporary directory, its own port and socket directory. PostgreSQL
// refuses to run as root, so when the run is root every command runs as
// the postgres user (runuser), which owns the directory.
type postgresServer struct {
	bin, dir string
	port     int
	asUser   []string // the runuser prefix, or none
}

// Schema is the PostgreSQL schema a run's processes keep their tables in.
const Schema = "nemesis"

func startPostgres(ctx context.Context) (*postgresServer, error) {
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	if len(bins) == 0 {
		return nil, fmt.Errorf("no /usr/lib/postgresql/*/bin/pg_ctl: the nemesis runs a PostgreSQL of its own (apt-get install postgresql)")
	}
	slices.Sort(bins)
	dir, err := os.MkdirTemp("", "skidata-nemesis-pg-")
	if err != nil {
		return nil, err
	}
	s := &postgresServer{bin: filepath.Dir(bins[len(bins)-1]), dir: dir}
	if err := s.init(ctx); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// init makes the database directory, configures it and starts the server.
func (s *postgresServer) init(ctx context.Context) error {
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return fmt.Errorf("PostgreSQL refuses to run as root and there is no postgres user to run it as: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(s.dir, uid, gid); err != nil {
			return err
		}
		s.asUser = []string{"runuser", "-u", "postgres", "--"}
	}
	if out, err := s.run(ctx, "initdb", "-D", s.data(), "-U", "postgres", "-A", "trust", "--no-locale", "-E", "UTF8", "--no-sync", "--no-instructions"); err != nil {
		return fmt.Errorf("initdb: %w\n%s", err, out)
	}
	var err error
	if s.port, err = freePort(0); err != nil {
		return err
	}
	// fsync off: every fault here ends processes, none the machine, so the
	// page cache survives them all; what a power cut would lose is not
	// modelled (docs/reliability.md).
	conf := fmt.Sprintf("\nlisten_addresses = '127.0.0.1'\nport = %d\nunix_socket_directories = '%s'\nfsync = off\nmax_connections = 200\n", s.port, s.dir)
	f, err := os.OpenFile(filepath.Join(s.data(), "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteString(conf)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("configure the run's PostgreSQL: %w", err)
	}
	return s.start(ctx)
}

func (s *postgresServer) data() string { return filepath.Join(s.dir, "data") }

func (s *postgresServer) logFile() string { return filepath.Join(s.dir, "postgres.log") }

// run runs one of PostgreSQL's programs, as the postgres user when the
// run is root.
func (s *postgresServer) run(ctx context.Context, prog string, args ...string) ([]byte, error) {
	argv := append(append(slices.Clone(s.asUser), filepath.Join(s.bin, prog)), args...)
	return exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
}

func (s *postgresServer) start(ctx context.Context) error {
	if out, err := s.run(ctx, "pg_ctl", "-D", s.data(), "-l", s.logFile(), "-w", "-t", "120", "start"); err != nil {
		return fmt.Errorf("start the run's PostgreSQL: %w\n%s", err, out)
	}
	return nil
}

func (s *postgresServer) name() string        { return "postgres" }
func (s *postgresServer) addr() string        { return fmt.Sprintf("127.0.0.1:%d", s.port) }
func (s *postgresServer) restartKind() string { return DBRestart }

// url is the connection string of the run's PostgreSQL at addr (the
// server's own, or a link's).
func (s *postgresServer) url(addr string) string {
	return fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable", addr)
}

// restart stops the server fast (sessions ended, a checkpoint) or
// immediately (no checkpoint: the start replays the WAL, as after a
// crash), waits down and starts it again.
func (s *postgresServer) restart(ctx context.Context, down time.Duration, rng *rand.Rand) (string, error) {
	mode := []string{"fast", "immediate"}[rng.IntN(2)]
	detail := "pg_ctl stop -m " + mode
	if out, err := s.run(ctx, "pg_ctl", "-D", s.data(), "-m", mode, "-w", "-t", "120", "stop"); err != nil {
		return detail, fmt.Errorf("stop the run's PostgreSQL: %w\n%s", err, out)
	}
	sleep(ctx, down)
	return detail, s.start(context.WithoutCancel(ctx))
}

// stop stops the server for good and removes what it wrote, keeping its
// log in logDir.
func (s *postgresServer) stop(logDir string) error {
	out, err := s.run(context.Background(), "pg_ctl", "-D", s.data(), "-m", "immediate", "-w", "stop")
	if err != nil {
		err = fmt.Errorf("stop the run's PostgreSQL: %w\n%s", err, out)
	}
	if b, rerr := os.ReadFile(s.logFile()); rerr == nil {
		_ = os.WriteFile(filepath.Join(logDir, "postgres.log"), b, 0o644)
	}
	if rerr := os.RemoveAll(s.dir); err == nil {
		err = rerr
	}
	return err
}

// rides reads every row of the rides table, straight from the server.
func (s *postgresServer) rides(ctx context.Context) (Stored, error) {
	conn, err := pgx.Connect(ctx, s.url(s.addr()))
	if err != nil {
		return nil, fmt.Errorf("read the stored rides: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, err := conn.Query(ctx, `SELECT resort_id, season_id, day_id, skier_id, ride_time, lift_id FROM `+pgx.Identifier{Schema, "rides"}.Sanitize())
	if err != nil {
		return nil, fmt.Errorf("read the stored rides: %w", err)
	}
	defer rows.Close()
	out := Stored{}
	for rows.Next() {
		var r loadgen.Ride
		if err := rows.Scan(&r.ResortID, &r.Season, &r.Day, &r.SkierID, &r.Time, &r.LiftID); err != nil {
			return nil, fmt.Errorf("read the stored rides: %w", err)
		}
		out[r]++
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the stored rides: %w", err)
	}
	return out, nil
}

// sleep waits d, or less if ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
