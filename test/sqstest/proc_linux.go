package sqstest

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel kill fauxqs when the test binary dies
// without running its cleanup (a test timeout panics past TestMain's
// defer), so no orphaned server is left behind.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
