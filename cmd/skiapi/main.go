// Command skiapi runs the skidata service: the Ski Data API, the queue
// consumer that persists rides, or both (see --role).
//
//	skiapi [serve] [flags]   run the service (the default command)
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
	"strings"
	"syscall"

	"github.com/skidata/skidata/app"
)

// version is set at link time: -ldflags "-X main.version=v1.2.3".
var version = "dev"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run returns the exit code: 0 done, 1 failed, 2 bad usage.
func run(args []string, stdout, stderr io.Writer) int {
	cmd := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		return serve(args, stderr)
	case "version":
		fmt.Fprintln(stdout, "skiapi", version)
		return 0
	case "help":
		usage(stderr, newFlagSet(stderr))
		return 0
	default:
		fmt.Fprintf(stderr, "skiapi: unknown command %q\n\n", cmd)
		usage(stderr, newFlagSet(stderr))
		return 2
	}
}

func newFlagSet(stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("skiapi", flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

func usage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, `Usage: skiapi [command] [flags]

Commands:
  serve     run the service (default)
  version   print the version
  help      print this help

Flags (each also read from the environment variable shown):
`)
	cfg := app.DefaultConfig()
	cfg.RegisterFlags(fs)
	fs.VisitAll(func(f *flag.Flag) {
		name, help := flag.UnquoteUsage(f)
		fmt.Fprintf(w, "  --%s %s\n        %s (default %q, env %s)\n", f.Name, name, help, f.DefValue, app.EnvName(f.Name))
	})
}

func serve(args []string, stderr io.Writer) int {
	fs := newFlagSet(stderr)
	fs.Usage = func() { usage(stderr, newFlagSet(stderr)) }
	cfg, err := app.ParseConfig(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "skiapi:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	svc, cleanup, err := app.Build(ctx, cfg)
	if err != nil {
		fmt.Fprintln(stderr, "skiapi: start:", err)
		return 1
	}
	defer cleanup()
	if err := svc.Run(ctx); err != nil {
		fmt.Fprintln(stderr, "skiapi:", err)
		return 1
	}
	return 0
}
