package cli

import "syscall"

// childSysProcAttr puts a replica child in its own process group (a Ctrl-C in
// the terminal reaches only the supervisor, which stops the children in
// order) and has the kernel send it SIGTERM if the supervisor dies first.
func childSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
