package main

import (
	"io"
	"os"

	"golang.org/x/sys/unix"

	"lakehouse/internal/progress"
)

// display is where a command shows the progress of long work on w: a bar
// redrawn in place when w is a terminal (an *os.File that is a character
// device), plain lines otherwise. A terminal's width is asked of the kernel
// (progress.DefaultWidth when it does not say).
func display(w io.Writer) progress.Display {
	d := progress.Display{W: w}
	f, ok := w.(*os.File)
	if !ok {
		return d
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return d
	}
	d.Terminal = true
	if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 0 {
		d.Width = int(ws.Col)
	}
	return d
}

// interactive reports whether a person is at the command: stdin and w
// (its stdout) are both terminals.
func interactive(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isCharDevice(f) && isCharDevice(os.Stdin)
}

func isCharDevice(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
