package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/skidata/skidata/ports"
)

// Service is one running skidata process: the HTTP API, the persister, or
// both, depending on the role.
type Service struct {
	cfg       Config
	log       *slog.Logger
	handler   http.Handler
	persister *Persister
	sub       ports.Subscriber
	stats     ports.QueueStats
	pprofAddr atomic.Pointer[string]
}

// NewService assembles a service from its parts (wire calls it).
func NewService(cfg Config, log *slog.Logger, handler http.Handler, persister *Persister, sub ports.Subscriber, stats ports.QueueStats) *Service {
	return &Service{cfg: cfg, log: log, handler: handler, persister: persister, sub: sub, stats: stats}
}

// Build composes the service the configuration asks for. The returned
// cleanup closes every adapter; call it after Run returns.
func Build(ctx context.Context, cfg Config) (*Service, func(), error) {
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	switch cfg.Store {
	case "memory":
		return initMemory(ctx, cfg)
	case "postgres":
		return initPostgres(ctx, cfg)
	case "dynamo-adopted", "dynamo-abandoned", "dynamo-counters", "dynamo-sharded":
		return initDynamo(ctx, cfg)
	default:
		return nil, nil, fmt.Errorf("store %q is not built into this binary", cfg.Store)
	}
}

// Handler is the HTTP API.
func (s *Service) Handler() http.Handler { return s.handler }

// Run listens on the configured address and serves until ctx ends.
func (s *Service) Run(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", s.cfg.Listen, err)
	}
	return s.Serve(ctx, ln)
}

// Serve runs the role's parts on ln until ctx ends, then shuts down in order:
// stop taking requests, let the persister drain every accepted ride, return.
func (s *Service) Serve(ctx context.Context, ln net.Listener) error {
	if s.cfg.PprofListen != "" {
		addr, stopPprof, err := startPprof(s.cfg.PprofListen)
		if err != nil {
			return err
		}
		s.pprofAddr.Store(&addr)
		defer stopPprof(context.WithoutCancel(ctx))
		s.log.Info("pprof serving", "addr", addr)
	}
	// The persister outlives ctx: it stops when drained, or at the
	// shutdown deadline (hardStop).
	hardCtx, hardStop := context.WithCancel(context.WithoutCancel(ctx))
	defer hardStop()
	persisterDone := make(chan error, 1)
	if s.cfg.RunsConsumer() {
		go func() { persisterDone <- s.persister.Run(hardCtx) }()
	}
	srv := &http.Server{Handler: s.handler, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 2 * time.Minute}
	serveDone := make(chan error, 1)
	go func() { serveDone <- srv.Serve(ln) }()
	s.log.Info("skidata serving", "addr", ln.Addr().String(), "role", s.cfg.Role, "store", s.cfg.Store, "queue", s.cfg.Queue)

	var runErr error
	select {
	case <-ctx.Done():
		s.log.Info("shutting down: no new requests, draining the queue")
	case err := <-serveDone:
		runErr = fmt.Errorf("http server: %w", err)
	case err := <-persisterDone:
		runErr = fmt.Errorf("persister stopped: %w", err)
		persisterDone <- nil
	}

	shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		s.log.Warn("http shutdown incomplete", "err", err)
	}
	if err := s.sub.Close(); err != nil {
		s.log.Warn("closing the subscriber", "err", err)
	}
	s.persister.Drain()
	if s.cfg.RunsConsumer() {
		select {
		case err := <-persisterDone:
			if err != nil && runErr == nil {
				runErr = err
			}
			s.log.Info("persister drained", "stored", s.persister.Stored())
		case <-shutCtx.Done():
			hardStop()
			<-persisterDone
			depth, _ := s.stats.Depth(context.Background())
			s.log.Error("shutdown deadline passed before the queue drained", "rides_left", depth)
		}
	}
	return runErr
}

// PprofAddr is the address pprof listens on once Serve has started it, or ""
// (--pprof-listen unset, or not serving yet).
func (s *Service) PprofAddr() string {
	if p := s.pprofAddr.Load(); p != nil {
		return *p
	}
	return ""
}

// Stored is how many rides this process's persister has written.
func (s *Service) Stored() int64 { return s.persister.Stored() }
