//go:build !linux

package standin

import "os/exec"

// dieWithParent has no portable equivalent outside Linux: Stop still ends
// the server on a normal exit.
func dieWithParent(*exec.Cmd) {}
