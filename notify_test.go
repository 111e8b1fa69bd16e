package main

import (
	"lakehouse/ingest/replay"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSystemdNotify listens where systemd would (NOTIFY_SOCKET, a unixgram
// socket) and sees READY=1 once start-up recovery is done, WATCHDOG=1 while
// the pipeline progresses, and STOPPING=1 when it shuts down.
func TestSystemdNotify(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	t.Setenv("NOTIFY_SOCKET", sock)
	got := make(chan string, 100)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				close(got)
				return
			}
			got <- string(buf[:n])
		}
	}()
	next := func(want string) {
		t.Helper()
		deadline := time.After(60 * time.Second)
		for {
			select {
			case m := <-got:
				if strings.Contains(m, want) {
					return
				}
			case <-deadline:
				t.Fatalf("no %s on NOTIFY_SOCKET within 60s", want)
			}
		}
	}
	src := replay.New(replay.Config{Seed: 11, Restamp: true})
	src.Loops(replay.Generate(11, 300), 1)
	a := startAppliance(t, src, nil)
	next("READY=1")
	next("WATCHDOG=1")
	a.drained(t, src.Counts().OnTime)
	next("WATCHDOG=1")
	a.stop()
	next("STOPPING=1")
}
