package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/skidata/skidata/cmd/skibench/internal/bench"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := bench.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
