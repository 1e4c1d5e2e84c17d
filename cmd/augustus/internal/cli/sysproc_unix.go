//go:build unix && !linux

package cli

import "syscall"

// childSysProcAttr puts a replica child in its own process group, so a
// Ctrl-C in the terminal reaches only the supervisor, which stops the
// children in order.
func childSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
