package e2e

import (
	"testing"

	"github.com/skidata/skidata/app/compose"
	"github.com/skidata/skidata/test/apitest"
)

func TestMemoryInprocEndToEnd(t *testing.T) {
	cfg := compose.DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	apitest.Run(t, apitest.Start(t, cfg))
}
