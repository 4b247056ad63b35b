package main

// PTYs on Windows are ConPTY pseudo consoles, through x/sys/windows: two
// pipes, CreatePseudoConsole over them, and the process started with the
// console as its PROC_THREAD_ATTRIBUTE_PSEUDOCONSOLE. Two Windows rules
// shape the code: the console keeps the output pipe open after the process
// ends, so the end of a process is followed by ClosePseudoConsole; and
// before Windows 11 24H2 ClosePseudoConsole waits until the output pipe is
// drained, so something reads that pipe on its own goroutine until the
// close returns. The same function set as pty_unix.go.

import (
	"errors"
	"io"
	"os"
	"sync"
	"time"
	"unicode/utf16"
	"unsafe"

	"golang.org/x/sys/windows"
)

type ptyProc struct {
	in, out   *os.File // the console's input (we write) and output (we read)
	console   windows.Handle
	process   windows.Handle
	processID int
	done      chan struct{}
	code      int
	closeOnce sync.Once
}

func startPTY(path string, argv []string, dir string, env []string, cols, rows int) (p *ptyProc, err error) {
	var inR, inW, outR, outW windows.Handle
	if err := windows.CreatePipe(&inR, &inW, nil, 0); err != nil {
		return nil, errorf("making the console's input pipe: %v", err)
	}
	if err := windows.CreatePipe(&outR, &outW, nil, 0); err != nil {
		windows.CloseHandle(inR)
		windows.CloseHandle(inW)
		return nil, errorf("making the console's output pipe: %v", err)
	}
	// The console holds its own copies of inR and outW.
	defer windows.CloseHandle(inR)
	defer windows.CloseHandle(outW)
	p = &ptyProc{in: os.NewFile(uintptr(inW), "conpty-in"), out: os.NewFile(uintptr(outR), "conpty-out"), done: make(chan struct{})}
	defer func() {
		if err != nil {
			p.in.Close()
			p.out.Close()
		}
	}()
	if err := windows.CreatePseudoConsole(windows.Coord{X: int16(cols), Y: int16(rows)}, inR, outW, 0, &p.console); err != nil {
		return nil, errorf("creating a pseudo console: %v; ConPTY needs Windows 10 1809 or later", err)
	}
	defer func() {
		if err != nil {
			windows.ClosePseudoConsole(p.console)
		}
	}()
	attrs, err := windows.NewProcThreadAttributeList(1)
	if err != nil {
		return nil, errorf("making the process's attribute list: %v", err)
	}
	defer attrs.Delete()
	// The attribute's value is the console handle itself, not a pointer to
	// it (as Windows documents); the handle's bits are passed as the
	// pointer without a uintptr conversion vet cannot follow.
	hpc := *(*unsafe.Pointer)(unsafe.Pointer(&p.console))
	if err := attrs.Update(windows.PROC_THREAD_ATTRIBUTE_PSEUDOCONSOLE, hpc, unsafe.Sizeof(p.console)); err != nil {
		return nil, errorf("attaching the pseudo console: %v", err)
	}
	si := &windows.StartupInfoEx{ProcThreadAttributeList: attrs.List()}
	si.Cb = uint32(unsafe.Sizeof(*si))
	si.Flags = windows.STARTF_USESTDHANDLES // none given: the console's own
	app, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return nil, err
	}
	line, err := windows.UTF16PtrFromString(windows.ComposeCommandLine(argv))
	if err != nil {
		return nil, err
	}
	wdir, err := windows.UTF16PtrFromString(dir)
	if err != nil {
		return nil, err
	}
	var pi windows.ProcessInformation
	flags := uint32(windows.EXTENDED_STARTUPINFO_PRESENT | windows.CREATE_UNICODE_ENVIRONMENT)
	if err := windows.CreateProcess(app, line, nil, nil, false, flags, envBlock(env), wdir, &si.StartupInfo, &pi); err != nil {
		return nil, errorf("starting %s on a pseudo console: %v", path, err)
	}
	windows.CloseHandle(pi.Thread)
	p.process, p.processID = pi.Process, int(pi.ProcessId)
	go p.reap()
	return p, nil
}

// envBlock is env as CreateProcess takes it: NUL-separated UTF-16, ended
// by a second NUL.
func envBlock(env []string) *uint16 {
	var b []uint16
	for _, kv := range env {
		b = append(b, utf16.Encode([]rune(kv))...)
		b = append(b, 0)
	}
	b = append(b, 0, 0)
	return &b[0]
}

// reap waits for the process, keeps its exit code, and closes the console,
// which ConPTY needs before the output pipe reports its end.
func (p *ptyProc) reap() {
	windows.WaitForSingleObject(p.process, windows.INFINITE)
	var code uint32
	if windows.GetExitCodeProcess(p.process, &code) == nil {
		p.code = int(code)
	} else {
		p.code = -1
	}
	p.closeConsole()
	close(p.done)
}

// closeConsole closes the pseudo console once, reading the output pipe on
// a goroutine of its own while the close waits for it to drain; what it
// reads then is dropped (the process is ending).
func (p *ptyProc) closeConsole() {
	p.closeOnce.Do(func() {
		stop := make(chan struct{})
		go func() {
			buf := make([]byte, 32<<10)
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := p.out.Read(buf); err != nil {
					return
				}
			}
		}()
		windows.ClosePseudoConsole(p.console)
		close(stop)
	})
}

func (p *ptyProc) Read(b []byte) (int, error) {
	n, err := p.out.Read(b)
	if err != nil && (errors.Is(err, windows.ERROR_BROKEN_PIPE) || errors.Is(err, os.ErrClosed)) {
		err = io.EOF
	}
	return n, err
}

func (p *ptyProc) Write(b []byte) (int, error) { return p.in.Write(b) }

func (p *ptyProc) resize(cols, rows int) error {
	return windows.ResizePseudoConsole(p.console, windows.Coord{X: int16(cols), Y: int16(rows)})
}

// hangup closes the console: ConPTY sends its processes CTRL_CLOSE_EVENT,
// Windows' nearest thing to SIGHUP.
func (p *ptyProc) hangup() { go p.closeConsole() }

func (p *ptyProc) kill() { windows.TerminateProcess(p.process, 1) }

// nudge does nothing: closing the console is a hangup no process can miss.
func (p *ptyProc) nudge() {}

// drainBy is a no-op: the output pipe ends when the console is closed,
// which reap does once the process has gone.
func (p *ptyProc) drainBy(time.Time) {}

func (p *ptyProc) pid() int { return p.processID }

func (p *ptyProc) close() error {
	p.in.Close()
	err := p.out.Close()
	windows.CloseHandle(p.process)
	return err
}

// ptyDefaultShell is the shell of last resort: %COMSPEC%, else cmd.exe.
func ptyDefaultShell() string {
	if c := os.Getenv("COMSPEC"); c != "" {
		return c
	}
	return `C:\Windows\System32\cmd.exe`
}

// exited says whether the process has been waited for.
func (p *ptyProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}
