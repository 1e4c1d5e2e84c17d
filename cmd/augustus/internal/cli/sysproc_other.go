//go:build !unix

package cli

import "syscall"

// childSysProcAttr has nothing to set outside Unix.
func childSysProcAttr() *syscall.SysProcAttr { return nil }
