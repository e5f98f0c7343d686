//go:build unix

package sqlite

import (
	"errors"
	"os"
	"syscall"
)

const locksSupported = true

// tryLock takes an exclusive flock on f without waiting: false when another
// open file description holds it.
func tryLock(f *os.File) (bool, error) {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, syscall.EWOULDBLOCK):
			return false, nil
		case errors.Is(err, syscall.EINTR):
			continue
		default:
			return false, err
		}
	}
}

// fileID identifies the file at path (device and inode), whatever the
// name it is opened by.
func fileID(path string) (any, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil, errors.New("no device and inode for " + path)
	}
	return [2]uint64{uint64(st.Dev), uint64(st.Ino)}, nil // their widths vary by system
}
