//go:build !unix

package cli

// processCPUSeconds is not measured outside Unix.
func processCPUSeconds() float64 { return 0 }
