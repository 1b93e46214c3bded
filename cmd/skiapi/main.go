// Command skiapi runs the skidata service: the Ski Data API, the queue
// consumer that persists rides, or both (see --role).
//
//	skiapi [serve] [flags]   run the service (the default command)
//	skiapi migrate [flags]   apply the PostgreSQL migrations, print the version
//	skiapi seed [flags]      load the missing demo resorts into the store (PostgreSQL, DynamoDB)
//	skiapi resorts put --id ID --name NAME|import FILE|list [flags]
//	                         register / list the resorts of the store (PostgreSQL, DynamoDB)
//	skiapi tables create|describe [flags]
//	                         create / show the DynamoDB tables of --store dynamo-*
//	skiapi queues create [flags]
//	                         create the SQS ride queue and its dead-letter queue (--queue sqs)
//	skiapi dlq list [--limit N]|replay [flags]
//	                         show / requeue the rides the queue dead-lettered
//	skiapi config [flags]    print the effective configuration, secrets masked
//	skiapi version           print the version
//
// Every flag has an environment variable (SKI_ and the flag name in upper
// snake case); run `skiapi --help` for the list.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/skidata/skidata/app/compose"
)

// version is set at link time: -ldflags "-X main.version=v1.2.3".
var version = "dev"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run returns the exit code: 0 done, 1 failed, 2 bad usage. Everything it
// prints goes through redact.Secrets: errors from a driver (an amqp URL
// that does not parse is quoted whole), the flag package's own messages and
// the usage's defaults can all hold a URL with a password.
func run(args []string, stdout, stderr io.Writer) int {
	stdout, stderr = maskedWriter{stdout}, maskedWriter{stderr}
	cmd := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	if cmd == "help" || slices.Contains(commands, cmd) && len(args) > 0 && isHelpFlag(args[0]) {
		// Asked for, the help is the command's output: stdout, exit 0.
		usage(stdout, newFlagSet(io.Discard))
		return 0
	}
	switch cmd {
	case "serve":
		return serve(args, stdout, stderr)
	case "migrate":
		return migrate(args, stdout, stderr)
	case "seed":
		return seed(args, stdout, stderr)
	case "resorts":
		return resorts(args, stdout, stderr)
	case "tables":
		return tables(args, stdout, stderr)
	case "queues":
		return queues(args, stdout, stderr)
	case "dlq":
		return dlq(args, stdout, stderr)
	case "config":
		return printConfig(args, stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, "skiapi", version)
		return 0
	default:
		line := fmt.Sprintf("skiapi: unknown command %q", cmd)
		if close := closest(cmd, commands); close != "" {
			line += fmt.Sprintf("; did you mean %q?", close)
		}
		fmt.Fprintln(stderr, line+" (skiapi help lists the commands)")
		return 2
	}
}

// commands are the words run accepts before the flags.
var commands = []string{"serve", "migrate", "seed", "resorts", "tables", "queues", "dlq", "config", "version", "help"}

// newFlagSet is a flag set that prints nothing itself: a parse error is
// reported as one line by parseError, and the usage only for --help.
func newFlagSet(stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("skiapi", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {}
	return fs
}

// isHelpFlag says whether arg asks for the help (-h, --help), as the flag
// package reads it.
func isHelpFlag(arg string) bool {
	name := strings.TrimLeft(arg, "-")
	return arg != name && (name == "h" || name == "help")
}

// parseError reports err from parsing args with fs: the usage on stdout
// for --help (exit 0), otherwise one line on stderr naming the flag and a
// fix (exit 2).
func parseError(fs *flag.FlagSet, args []string, err error, stdout, stderr io.Writer) int {
	if errors.Is(err, flag.ErrHelp) {
		usage(stdout, newFlagSet(io.Discard))
		return 0
	}
	fmt.Fprintln(stderr, "skiapi:", usageLine(fs, args, err))
	return 2
}

func usage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, `Usage: skiapi [command] [flags]

Commands:
  serve     run the service (default)
  migrate   apply pending PostgreSQL migrations and print the schema version
            (needs --store postgres --database-url ...)
  seed      load the demo resorts missing from the store: PostgreSQL (same
            flags as migrate) or a DynamoDB model (after tables create);
            existing resorts keep their seasons. --profile ec2 does not
            seed at start: run this once if you want the demo resorts
  resorts put --id ID --name NAME
                   register a resort, or rename it (its seasons stay), in the
                   store the flags name: PostgreSQL or a DynamoDB model
  resorts import FILE
                   register every resort of a CSV file: a header row id,name
                   (quoted names may hold commas), one resort a row; the
                   whole file is checked before anything is written
  resorts list     print the store's resorts as CSV (id,name,seasons), which
                   resorts import reads back. put and import are harmless to
                   rerun: they say what they added, renamed or left unchanged
  tables create    create the DynamoDB tables and index of --store
                   `+tableStores()+` (with --dynamo-table-prefix),
                   on-demand billing; waits until active; harmless to rerun
  tables describe  print the tables, keys, indexes, status and item counts
  queues create    create the queues of --queue `+queueCreators()+`
                   (the ride queue and its dead-letter queue, with the
                   redrive policy), or set those that exist to the flags;
                   harmless to rerun
  dlq list         print the rides in the queue's dead-letter queue without
                   removing them (--limit N, default 100; needs --queue
                   `+deadLetterQueues()+` and the service's flags for it)
  dlq replay       move the dead-lettered rides back to the ride queues and
                   print how many
  config    print the effective configuration, one "flag = value (source)"
            a line (source: flag, env, profile or default), passwords masked
  version   print the version
  help      print this help

Flags (each also read from the environment variable shown):
`)
	cfg := compose.DefaultConfig()
	cfg.RegisterFlags(fs)
	fs.VisitAll(func(f *flag.Flag) {
		name, help := flag.UnquoteUsage(f)
		fmt.Fprintf(w, "  --%s %s\n        %s (default %q, env %s)\n", f.Name, name, help, compose.MaskSecrets(f.DefValue), compose.EnvName(f.Name))
	})
}

// maskedWriter masks secrets in what is written through it. Every print in
// this command (and in the flag package) writes whole lines, so a URL is
// never split across two writes.
type maskedWriter struct{ w io.Writer }

func (m maskedWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(m.w, compose.MaskSecrets(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// parseConfig reads the flags every command shares; ok false means return
// code (0 after --help, 2 for bad usage).
func parseConfig(args []string, stdout, stderr io.Writer) (cfg compose.Config, code int, ok bool) {
	return parseConfigWith(args, stdout, stderr, nil)
}

// parseConfigWith is parseConfig with a command's own flags added by extra.
func parseConfigWith(args []string, stdout, stderr io.Writer, extra func(*flag.FlagSet)) (cfg compose.Config, code int, ok bool) {
	fs := newFlagSet(stderr)
	if extra != nil {
		extra(fs)
	}
	fs.SetOutput(io.Discard)
	cfg, err := compose.ParseConfig(fs, args)
	if err != nil {
		return cfg, parseError(fs, args, err, stdout, stderr), false
	}
	return cfg, 0, true
}

func serve(args []string, stdout, stderr io.Writer) int {
	cfg, code, ok := parseConfig(args, stdout, stderr)
	if !ok {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	svc, cleanup, err := compose.Build(ctx, cfg)
	if err != nil {
		fmt.Fprintln(stderr, "skiapi: start:", withHint(err))
		return 1
	}
	defer cleanup()
	if err := svc.Run(ctx); err != nil {
		fmt.Fprintln(stderr, "skiapi:", err)
		return 1
	}
	return 0
}

func migrate(args []string, stdout, stderr io.Writer) int {
	return oneShot("migrate", args, stdout, stderr, func(ctx context.Context, cfg compose.Config) (string, error) {
		v, err := migrateStore(ctx, cfg)
		return fmt.Sprintf("schema at version %d", v), err
	})
}

func seed(args []string, stdout, stderr io.Writer) int {
	return oneShot("seed", args, stdout, stderr, seedStore)
}

// oneShot runs a command that does its work and exits, printing what do
// reports on success.
func oneShot(name string, args []string, stdout, stderr io.Writer, do func(context.Context, compose.Config) (string, error)) int {
	return oneShotWith(name, args, nil, stdout, stderr, do)
}

// oneShotWith is oneShot with the command's own flags added by extra. An
// error app marks as ErrUsage (a flag that does not fit the command) exits 2.
func oneShotWith(name string, args []string, extra func(*flag.FlagSet), stdout, stderr io.Writer, do func(context.Context, compose.Config) (string, error)) int {
	cfg, code, ok := parseConfigWith(args, stdout, stderr, extra)
	if !ok {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	msg, err := do(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "skiapi: %s: %s\n", name, withHint(err))
		if errors.Is(err, errUsage) {
			return 2
		}
		return 1
	}
	fmt.Fprint(stdout, msg)
	if !strings.HasSuffix(msg, "\n") {
		fmt.Fprintln(stdout)
	}
	return 0
}

// subcommand splits "create --flags..." into the sub-command and its flags.
func subcommand(name string, args []string, subs []string, stderr io.Writer) (string, []string, bool) {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") || !slices.Contains(subs, args[0]) {
		fmt.Fprintf(stderr, "skiapi: %s needs one of: %s (e.g. skiapi %s %s --help)\n", name, strings.Join(subs, ", "), name, subs[0])
		return "", nil, false
	}
	return args[0], args[1:], true
}

func tables(args []string, stdout, stderr io.Writer) int {
	sub, args, ok := subcommand("tables", args, []string{"create", "describe"}, stderr)
	if !ok {
		return 2
	}
	return oneShot("tables "+sub, args, stdout, stderr, func(ctx context.Context, cfg compose.Config) (string, error) {
		if sub == "describe" {
			return describeTables(ctx, cfg)
		}
		if err := createTables(ctx, cfg); err != nil {
			return "", err
		}
		return fmt.Sprintf("tables of %s (prefix %q) are active", cfg.Store, cfg.Dynamo.TablePrefix), nil
	})
}

func queues(args []string, stdout, stderr io.Writer) int {
	if _, args, ok := subcommand("queues", args, []string{"create"}, stderr); ok {
		return oneShot("queues create", args, stdout, stderr, createQueues)
	}
	return 2
}

func dlq(args []string, stdout, stderr io.Writer) int {
	sub, args, ok := subcommand("dlq", args, []string{"list", "replay"}, stderr)
	if !ok {
		return 2
	}
	if sub == "replay" {
		return oneShot("dlq replay", args, stdout, stderr, func(ctx context.Context, cfg compose.Config) (string, error) {
			n, err := replayDeadLetters(ctx, cfg)
			return fmt.Sprintf("%d dead-lettered rides moved back to the ride queues", n), err
		})
	}
	limit := 100
	extra := func(fs *flag.FlagSet) { fs.IntVar(&limit, "limit", limit, "most dead letters to show") }
	return oneShotWith("dlq list", args, extra, stdout, stderr, func(ctx context.Context, cfg compose.Config) (string, error) {
		if limit < 1 {
			return "", fmt.Errorf("--limit must be at least 1, got %d: %w", limit, errUsage)
		}
		dls, err := listDeadLetters(ctx, cfg, limit)
		if err != nil {
			return "", err
		}
		var b strings.Builder
		for _, d := range dls {
			if d.BodyErr != "" {
				fmt.Fprintf(&b, "unreadable  id=%s error=%q", d.MessageID, d.BodyErr)
			} else {
				r := d.Ride
				fmt.Fprintf(&b, "resort=%d season=%s day=%s skier=%d time=%d lift=%d", r.ResortID(), r.SeasonID(), r.DayID(), r.SkierID(), r.Time(), r.LiftID())
			}
			fmt.Fprintf(&b, "  reason=%s queue=%s deaths=%d\n", d.Reason, d.Queue, d.Count)
		}
		fmt.Fprintf(&b, "%d dead-lettered rides shown (limit %d)", len(dls), limit)
		return b.String(), nil
	})
}

// printConfig prints every setting as the other commands would see it and
// where it came from, so an operator can check a unit's environment without
// starting it. An invalid configuration is printed too, then reported.
func printConfig(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet(io.Discard)
	_, src, err := compose.ParseConfigSources(fs, args, os.LookupEnv)
	if fs.Parsed() {
		fmt.Fprint(stdout, compose.EffectiveConfig(fs, src))
	}
	if err != nil {
		return parseError(fs, args, err, stdout, stderr)
	}
	return 0
}

// queueCreators and deadLetterQueues are the queues of the registry that
// have queues to create, and dead-letter queues, a|b|c.
func queueCreators() string {
	return strings.Join(compose.QueueNamesWhere(func(d compose.QueueDriver) bool { return d.CreateQueues != nil }), "|")
}
func deadLetterQueues() string {
	return strings.Join(compose.QueueNamesWhere(func(d compose.QueueDriver) bool { return d.DeadLetters != nil }), "|")
}

// tableStores is the stores of the registry that have tables to manage, a|b|c.
func tableStores() string {
	return strings.Join(compose.StoreNamesWhere(func(d compose.StoreDriver) bool { return d.Tables != nil }), "|")
}
