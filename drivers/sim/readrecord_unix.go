//go:build unix

package sim

import (
	"io/fs"
	"syscall"
)

// readRecord reads a record file into buf (nil: a new one) in three system
// calls when it fits: open, one read (a regular file's read returns less
// than asked only at its end), close. List reads every instance's record:
// os.Open would make eight of them, offering each file to Go's poller
// (which refuses regular files) between setting and clearing O_NONBLOCK,
// and os.ReadFile asks the size first.
func readRecord(path string, buf []byte) ([]byte, error) {
	fd, err := retryEINTR(func() (int, error) { return syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0) })
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	if len(buf) == 0 {
		buf = make([]byte, recordBytes)
	}
	data := buf[:0]
	for {
		if len(data) == cap(data) { // a record larger than any sbf writes: read on
			data = append(make([]byte, 0, 2*cap(data)), data...)
		}
		n, err := retryEINTR(func() (int, error) { return syscall.Read(fd, data[len(data):cap(data)]) })
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 || len(data)+n < cap(data) {
			return data[:len(data)+n], nil
		}
		data = data[:len(data)+n]
	}
}

func retryEINTR(call func() (int, error)) (int, error) {
	for {
		n, err := call()
		if err != syscall.EINTR {
			return n, err
		}
	}
}
