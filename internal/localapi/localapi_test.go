package localapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestInfoFile: appliance.json round-trips with mode 0600; an address off
// loopback is refused; RemoveInfo leaves a file another appliance wrote.
func TestInfoFile(t *testing.T) {
	dir := t.TempDir()
	info := Info{PID: os.Getpid(), URL: "http://127.0.0.1:1", Token: "t1", Embedded: []string{"broker"}}
	if err := WriteInfo(dir, info); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, File))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v; want 0600", st.Mode(), err)
	}
	got, err := ReadInfo(dir)
	if err != nil || got.Token != "t1" || got.PID != info.PID {
		t.Fatalf("read back %+v, %v", got, err)
	}
	RemoveInfo(dir, Info{PID: info.PID, Token: "another"})
	if _, err := os.Stat(filepath.Join(dir, File)); err != nil {
		t.Fatal("removed another appliance's file")
	}
	RemoveInfo(dir, info)
	if _, err := os.Stat(filepath.Join(dir, File)); !os.IsNotExist(err) {
		t.Fatalf("its own file is still there: %v", err)
	}
	if err := WriteInfo(dir, Info{PID: 1, URL: "http://10.0.0.1:80"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadInfo(dir); err == nil || !strings.Contains(err.Error(), "no loopback address") {
		t.Fatalf("off loopback: %v", err)
	}
}

// TestDial: no file, a file of a process that is gone and an address
// nobody answers at all mean no appliance; an answering one is reached
// with its token, says what it holds, and leases.
func TestDial(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if c, err := Dial(ctx, dir); c != nil || err != nil {
		t.Fatalf("no file: %v, %v", c, err)
	}
	if err := WriteInfo(dir, Info{PID: os.Getpid(), URL: "http://127.0.0.1:1", Token: "x"}); err != nil {
		t.Fatal(err)
	}
	if c, _ := Dial(ctx, dir); c != nil {
		t.Fatal("an address nobody answers at was dialled")
	}
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	if err := WriteInfo(dir, Info{PID: gone.Process.Pid, URL: "http://127.0.0.1:1", Token: "x"}); err != nil {
		t.Fatal(err)
	}
	if c, err := Dial(ctx, dir); c != nil || err != nil {
		t.Fatalf("a process that is gone: %v, %v", c, err)
	}
	var leased []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		switch {
		case r.Method == http.MethodGet && r.URL.Path == BrokerPath+"/topics":
			w.Write([]byte("[]"))
		case r.Method == http.MethodPost && r.URL.Path == LeasePath:
			var req struct{ Tables []string }
			_ = json.NewDecoder(r.Body).Decode(&req)
			leased = req.Tables
			w.Write([]byte(`{"id":"L1"}`))
		case r.Method == http.MethodDelete && r.URL.Path == LeasePath+"/L1":
			leased = nil
			w.WriteHeader(http.StatusNoContent)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	if err := WriteInfo(dir, Info{PID: os.Getpid(), URL: srv.URL, Token: "tok", Embedded: []string{"catalog"}}); err != nil {
		t.Fatal(err)
	}
	c, err := Dial(ctx, dir)
	if c == nil || err != nil {
		t.Fatalf("an answering appliance: %v, %v", c, err)
	}
	if !c.Holds("catalog") || c.Holds("broker") || (*Client)(nil).Holds("catalog") {
		t.Fatal("Holds")
	}
	if uri, tok := c.Catalog(); uri != "rest+"+srv.URL+IcebergPath || tok != "tok" {
		t.Fatalf("catalog %s %s", uri, tok)
	}
	ls, release, err := c.Lease(ctx, []string{"silver.edits"}, time.Minute)
	if err != nil || ls.ID != "L1" || len(leased) != 1 {
		t.Fatalf("lease %+v, %v, leased %v", ls, err, leased)
	}
	release()
	if leased != nil {
		t.Fatal("the lease was not released")
	}
}
