package main

// Opening a PTY on Linux: /dev/ptmx gives the master, TIOCGPTN its number,
// TIOCSPTLCK 0 unlocks the slave, which is opened by number with O_NOCTTY
// so that lembas itself never gains a controlling terminal.

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

func openPTYPair() (master, slave *os.File, err error) {
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, errorf("opening /dev/ptmx: %v; a pty needs devpts mounted at /dev/pts", err)
	}
	defer func() {
		if err != nil {
			unix.Close(fd)
		}
	}()
	if err = unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		return nil, nil, errorf("unlocking the pty: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		return nil, nil, errorf("numbering the pty: %v", err)
	}
	name := fmt.Sprintf("/dev/pts/%d", n)
	sfd, err := unix.Open(name, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, errorf("opening the pty's slave %s: %v", name, err)
	}
	// Non-blocking, so the master joins Go's poller: a read waits without
	// holding a thread, and close or a deadline ends it.
	if err = unix.SetNonblock(fd, true); err != nil {
		unix.Close(sfd)
		return nil, nil, errorf("making the pty non-blocking: %v", err)
	}
	return os.NewFile(uintptr(fd), "/dev/ptmx"), os.NewFile(uintptr(sfd), name), nil
}
