//go:build !unix

package bench

// processCPUSeconds is not measured outside Unix.
func processCPUSeconds() float64 { return 0 }
