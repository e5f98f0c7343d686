//go:build !unix

package sqlite

import "os"

// locksSupported is false: holders are not tracked, and runs are recovered
// by lease expiry only.
const locksSupported = false

func tryLock(*os.File) (bool, error) { return false, nil }
