//go:build unix

package bench

import (
	"syscall"
	"time"
)

// processCPUSeconds returns the user and system CPU time of this process.
func processCPUSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	d := time.Duration(ru.Utime.Nano()) + time.Duration(ru.Stime.Nano())
	return d.Seconds()
}
