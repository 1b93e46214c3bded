package compose

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"
)

// logRepeatsPerSecond is how many lines with the same level and message are
// written per second; the rest are counted and summarised.
const logRepeatsPerSecond = 10

// NewLogger returns the process logger in the configured format and level,
// rate-limited so an error storm (a queue down under full load) cannot flood
// the log (see limitRepeats), with every secret masked (see maskSecrets).
func NewLogger(cfg Config) *slog.Logger { return newLoggerTo(os.Stderr, cfg) }

func newLoggerTo(w io.Writer, cfg Config) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel)) // validated in Config.Validate
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: maskAttr}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if cfg.LogFormat == "json" {
		h = slog.NewJSONHandler(w, opts)
	}
	return slog.New(maskMessages{limitRepeats(h, logRepeatsPerSecond, time.Now)})
}

// maskAttr is the handlers' ReplaceAttr: every attribute value, in groups
// too, is printed through MaskSecrets (redact.Secrets), so an adapter's error that quotes
// a URL (the amqp and url parsers quote it whole) cannot put a password in
// the log. Values are formatted as the handler would before masking.
func maskAttr(_ []string, a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, MaskSecrets(v.String()))
	case slog.KindAny:
		var s string
		if err, ok := v.Any().(error); ok {
			s = err.Error()
		} else {
			s = fmt.Sprintf("%+v", v.Any())
		}
		return slog.String(a.Key, MaskSecrets(s))
	}
	return a
}

// maskMessages masks secrets in the message itself, which ReplaceAttr
// does not see.
type maskMessages struct{ slog.Handler }

func (h maskMessages) Handle(ctx context.Context, r slog.Record) error {
	if m := MaskSecrets(r.Message); m != r.Message {
		nr := slog.NewRecord(r.Time, r.Level, m, r.PC)
		r.Attrs(func(a slog.Attr) bool { nr.AddAttrs(a); return true })
		r = nr
	}
	return h.Handler.Handle(ctx, r)
}

func (h maskMessages) WithAttrs(attrs []slog.Attr) slog.Handler {
	return maskMessages{h.Handler.WithAttrs(attrs)}
}

func (h maskMessages) WithGroup(name string) slog.Handler {
	return maskMessages{h.Handler.WithGroup(name)}
}

// limitRepeats wraps h so that at most perSecond records with the same level
// and message are written in each one-second window; the others are dropped
// and counted, and the first record handled after the window closes is
// preceded by one "log lines suppressed" summary per message that lost lines.
// (A storm that stops dead leaves its last count unreported until the next
// line is logged: the price of not running a timer goroutine.)
func limitRepeats(h slog.Handler, perSecond int, now func() time.Time) slog.Handler {
	return &repeatLimiter{next: h, state: &repeatState{base: h, limit: perSecond, now: now, counts: map[repeatKey]int{}}}
}

type repeatKey struct {
	level slog.Level
	msg   string
}

// repeatState is shared by a handler and every handler derived from it with
// WithAttrs/WithGroup, so a message is limited however it was logged.
type repeatState struct {
	base   slog.Handler // summaries go here, without the caller's attrs
	limit  int
	now    func() time.Time
	mu     sync.Mutex
	window time.Time
	counts map[repeatKey]int
}

type repeatLimiter struct {
	next  slog.Handler
	state *repeatState
}

func (h *repeatLimiter) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h *repeatLimiter) Handle(ctx context.Context, r slog.Record) error {
	s := h.state
	s.mu.Lock()
	now := s.now()
	var suppressed map[repeatKey]int
	if now.Sub(s.window) >= time.Second {
		for k, n := range s.counts {
			if n > s.limit {
				if suppressed == nil {
					suppressed = map[repeatKey]int{}
				}
				suppressed[k] = n - s.limit
			}
		}
		clear(s.counts)
		s.window = now
	}
	k := repeatKey{r.Level, r.Message}
	s.counts[k]++
	drop := s.counts[k] > s.limit
	s.mu.Unlock()

	for k, n := range suppressed {
		sum := slog.NewRecord(now, max(k.level, slog.LevelWarn), "log lines suppressed", 0)
		sum.AddAttrs(slog.String("message", k.msg), slog.Int("suppressed", n), slog.Int("limit_per_second", s.limit))
		if s.base.Enabled(ctx, sum.Level) {
			_ = s.base.Handle(ctx, sum)
		}
	}
	if drop {
		return nil
	}
	return h.next.Handle(ctx, r)
}

func (h *repeatLimiter) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &repeatLimiter{next: h.next.WithAttrs(attrs), state: h.state}
}

func (h *repeatLimiter) WithGroup(name string) slog.Handler {
	return &repeatLimiter{next: h.next.WithGroup(name), state: h.state}
}
