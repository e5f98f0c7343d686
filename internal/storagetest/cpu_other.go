//go:build !unix

package storagetest

import "time"

// processCPU returns 0: the process's CPU time is not read on this system.
func processCPU() time.Duration { return 0 }
