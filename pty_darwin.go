package main

// Opening a PTY on macOS: /dev/ptmx gives the master; TIOCPTYGRANT and
// TIOCPTYUNLK (grantpt and unlockpt) make the slave usable, TIOCPTYGNAME
// names it (a 128-byte buffer), and it is opened with O_NOCTTY.

import (
	"bytes"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

func openPTYPair() (master, slave *os.File, err error) {
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, errorf("opening /dev/ptmx: %v", err)
	}
	defer func() {
		if err != nil {
			unix.Close(fd)
		}
	}()
	if err = ioctlNoArg(fd, unix.TIOCPTYGRANT); err != nil {
		return nil, nil, errorf("granting the pty: %v", err)
	}
	if err = ioctlNoArg(fd, unix.TIOCPTYUNLK); err != nil {
		return nil, nil, errorf("unlocking the pty: %v", err)
	}
	var buf [128]byte
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(unix.TIOCPTYGNAME), uintptr(unsafe.Pointer(&buf[0]))); e != 0 {
		return nil, nil, errorf("naming the pty: %v", e)
	}
	name := string(buf[:bytes.IndexByte(buf[:], 0)])
	sfd, err := unix.Open(name, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, errorf("opening the pty's slave %s: %v", name, err)
	}
	// The master stays blocking on macOS: kqueue's readiness reports for
	// ptys have not always been reliable, and a blocked read ends when the
	// last holder of the slave goes.
	return os.NewFile(uintptr(fd), "/dev/ptmx"), os.NewFile(uintptr(sfd), name), nil
}

func ioctlNoArg(fd int, req uint) error {
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), 0); e != 0 {
		return e
	}
	return nil
}
