package compose

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock is a settable clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func jsonLines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, m)
	}
	buf.Reset()
	return out
}

func TestLogRepeatsBeyondTheLimitAreDroppedAndSummarised(t *testing.T) {
	var buf bytes.Buffer
	clock := &fakeClock{t: time.Unix(1_000_000, 0)}
	log := slog.New(limitRepeats(slog.NewJSONHandler(&buf, nil), 3, clock.now))
	for range 10 {
		log.Error("publish failed", "err", "queue is down")
	}
	log.With("component", "persister").Error("publish failed", "err", "queue is down") // derived loggers share the limit
	log.Warn("something else")
	lines := jsonLines(t, &buf)
	if len(lines) != 4 {
		t.Fatalf("wrote %d lines for 11 repeats (limit 3) and one other message; want 4: %v", len(lines), lines)
	}

	clock.advance(time.Second)
	log.Error("publish failed", "err", "queue is down")
	lines = jsonLines(t, &buf)
	if len(lines) != 2 {
		t.Fatalf("after the window: %d lines; want the summary then the message: %v", len(lines), lines)
	}
	sum := lines[0]
	if sum["msg"] != "log lines suppressed" || sum["message"] != "publish failed" || sum["suppressed"] != float64(8) {
		t.Errorf("summary = %v; want 8 suppressed of \"publish failed\"", sum)
	}
	if lines[1]["msg"] != "publish failed" {
		t.Errorf("line after the summary = %v; want the message itself", lines[1])
	}
}

func TestLogLimitCountsLevelsSeparately(t *testing.T) {
	var buf bytes.Buffer
	clock := &fakeClock{t: time.Unix(1_000_000, 0)}
	log := slog.New(limitRepeats(slog.NewJSONHandler(&buf, nil), 1, clock.now))
	log.Warn("x")
	log.Error("x")
	if n := len(jsonLines(t, &buf)); n != 2 {
		t.Errorf("one warn and one error with the same message wrote %d lines; want 2", n)
	}
}

func TestLogsMaskPasswordsInMessagesAttributesErrorsAndGroups(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		var buf bytes.Buffer
		cfg := DefaultConfig()
		cfg.LogFormat = format
		log := newLoggerTo(&buf, cfg).With("broker", "amqp://u:attrs3cret@mq.internal:5672/")
		log.Warn("dial redis://:msgs3cret@cache:6379/0 failed",
			"err", errors.New(`parse "amqp://u:errs3cret@mq:bad/": invalid port`),
			"url", "postgres://u:pa%zz/#?@db/x",
			slog.Group("dep", "dsn", "host=db password=grps3cret"),
			"any", struct{ URL string }{"redis://u:anys3cret@h/0"})
		out := buf.String()
		for _, pw := range []string{"attrs3cret", "msgs3cret", "errs3cret", "pa%zz", "grps3cret", "anys3cret"} {
			if strings.Contains(out, pw) {
				t.Errorf("%s log shows %q:\n%s", format, pw, out)
			}
		}
		if !strings.Contains(out, "mq.internal") || !strings.Contains(out, "xxxxx") {
			t.Errorf("%s log lost the masked context:\n%s", format, out)
		}
	}
}
