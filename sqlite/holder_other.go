//go:build !unix

package sqlite

import (
	"os"
	"path/filepath"
)

// locksSupported is false: holders are not tracked, and runs are recovered
// by lease expiry only.
const locksSupported = false

func tryLock(*os.File) (bool, error) { return false, nil }

// fileID identifies the file at path by its absolute, symlink-free name.
func fileID(path string) (any, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	return filepath.EvalSymlinks(abs)
}
