package compose

import (
	"fmt"
	"net"
)

func (c Config) validateAdmission() error {
	a := c.Admission
	switch {
	case a.SoftLimit > 0 && a.Rate == 0:
		return fmt.Errorf("--queue-soft-limit scales --ingest-rate down, so it needs --ingest-rate")
	case a.SoftLimit > 0 && a.HardLimit <= a.SoftLimit:
		return fmt.Errorf("--queue-soft-limit %d needs a larger --queue-hard-limit (the depth where the rate reaches its floor), got %d", a.SoftLimit, a.HardLimit)
	}
	if c.PprofListen != "" {
		host, _, err := net.SplitHostPort(c.PprofListen)
		if err != nil {
			return fmt.Errorf("--pprof-listen %q: %w", c.PprofListen, err)
		}
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return fmt.Errorf("--pprof-listen %q must be a loopback address (127.0.0.1, ::1 or localhost): profiles expose the process's internals", c.PprofListen)
		}
	}
	return nil
}
