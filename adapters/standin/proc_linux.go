package standin

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel kill the stand-in when the process that
// started it dies without running its cleanup (a test timeout panics past
// TestMain's defer; the nemesis killed), so no orphaned server is left
// behind.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
