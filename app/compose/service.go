package compose

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/skidata/skidata/adapters/httpapi"
	"github.com/skidata/skidata/app"
	"github.com/skidata/skidata/ports"
)

// Service is one running skidata process: the HTTP API, the persister, or
// both, depending on the role.
type Service struct {
	cfg       Config
	log       *slog.Logger
	handler   http.Handler
	persister *app.Persister   // nil in the api role
	sub       ports.Subscriber // nil in the api role
	stats     ports.QueueStats
	metrics   ports.Metrics
	pprofAddr atomic.Pointer[string]
}

// injectors build the service for a role (wire_gen.go).
var injectors = map[string]func(context.Context, Config, RegionSource) (*Service, func(), error){
	RoleAll: buildAll, RoleAPI: buildAPI, RoleConsumer: buildConsumer,
}

// Build validates cfg and composes the service for its role, with the
// store, queue and cache it names. On EC2 (--profile ec2) a region not
// configured is the instance's. The cleanup closes what was opened, in
// reverse order.
func Build(ctx context.Context, cfg Config) (*Service, func(), error) {
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	region := configuredRegion(cfg)
	if cfg.Profile == "ec2" {
		region = regionOrInstance(cfg, NewLogger(cfg))
	}
	inject, ok := injectors[cfg.Role]
	if !ok {
		return nil, nil, fmt.Errorf("no injector for role %q", cfg.Role)
	}
	return inject(ctx, cfg, region)
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

// Serve runs the role's parts on ln until ctx ends, then shuts down in two
// budgets: HTTP first (requests in flight get --http-shutdown-timeout, then
// their connections are closed), then the queue (the persister gets
// --shutdown-timeout to store every accepted ride). The budgets are separate
// so that a client stalled mid-body cannot use up the drain's time.
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
	if s.persister != nil {
		go func() { persisterDone <- s.persister.Run(hardCtx) }()
	}
	srv := s.httpServer()
	serveDone := make(chan error, 1)
	go func() { serveDone <- srv.Serve(ln) }()
	// gomaxprocs: the cores the process schedules its goroutines on (Go's
	// GOMAXPROCS; docs/operations.md, "Sharing a box's cores").
	s.log.Info("skidata serving", "addr", ln.Addr().String(), "role", s.cfg.Role, "store", s.cfg.Store, "queue", s.cfg.Queue, "gomaxprocs", runtime.GOMAXPROCS(0))

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

	httpCtx, cancelHTTP := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.HTTP.ShutdownTimeout)
	if err := srv.Shutdown(httpCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		s.log.Warn("requests still running at the end of the HTTP shutdown budget; closing their connections", "budget", s.cfg.HTTP.ShutdownTimeout, "err", err)
		_ = srv.Close()
	}
	cancelHTTP()

	shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
	defer cancel()
	if s.persister != nil {
		if err := s.sub.Close(); err != nil {
			s.log.Warn("closing the subscriber", "err", err)
		}
		s.persister.Drain()
	}
	if s.persister != nil {
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
			if depth.Rides > 0 {
				s.metrics.RidesDropped("shutdown", int(depth.Rides))
			}
			s.log.Error("shutdown deadline passed before the queue drained", "rides_left", depth.Rides)
		}
	}
	return runErr
}

// httpServer is net/http's server, with the handler and the timeouts
// configured.
func (s *Service) httpServer() *http.Server {
	return &http.Server{
		Handler:           s.servedHandler(),
		ReadHeaderTimeout: min(5*time.Second, s.cfg.HTTP.ReadTimeout),
		ReadTimeout:       s.cfg.HTTP.ReadTimeout,
		WriteTimeout:      s.cfg.HTTP.WriteTimeout,
		IdleTimeout:       2 * time.Minute,
	}
}

// servedHandler is the handler net/http's server runs: with a deadline on
// every request.
func (s *Service) servedHandler() http.Handler {
	return httpapi.WithDeadline(s.handler, s.requestDeadline())
}

// requestDeadline is every request's deadline, whatever the store, queue
// and cache: one rule, rather than a list of the modes in which nothing a
// request calls can block.
func (s *Service) requestDeadline() time.Duration { return s.cfg.HTTP.HandlerTimeout }

// PprofAddr is the address pprof listens on once Serve has started it, or ""
// (--pprof-listen unset, or not serving yet).
func (s *Service) PprofAddr() string {
	if p := s.pprofAddr.Load(); p != nil {
		return *p
	}
	return ""
}

// Stored is how many rides this process's persister has written.
func (s *Service) Stored() int64 {
	if s.persister == nil {
		return 0
	}
	return s.persister.Stored()
}
