// Package fault provides named crash points ("fault hooks") that tests and the
// prove command arm to kill the process at an exact step of a protocol, for
// example between a bbolt commit and the return to the caller.
//
// A hook costs one atomic load when nothing is armed. When an armed hook is
// reached it writes "FAULT <name>" to stderr (so the parent can prove the
// crash happened where intended) and kills its own process with SIGKILL: no
// deferred function, no flush, no graceful anything, exactly as a power cut or
// the OOM killer would.
//
// Failure points are the other kind: Err(name) returns the error an
// in-process test armed there with ArmErr (a full disk, a store that cannot
// be reached), so the test can show the caller pauses and resumes instead
// of stopping. They are never armed outside tests.
//
// Only main.go (and test binaries) arm hooks; library code only calls Hit
// and Err.
package fault

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

var (
	armed atomic.Bool
	mu    sync.Mutex
	hooks = map[string]*hook{}
	known = map[string]string{} // name -> description, from Register
)

type hook struct {
	skip int64 // hits to let pass before firing
	hits atomic.Int64
	act  func(name string)
}

// Register declares a hook name and what it interrupts, so commands can list
// the valid names. Packages call it from a package-level var initializer.
func Register(name, description string) string {
	mu.Lock()
	defer mu.Unlock()
	known[name] = description
	return name
}

// Known returns the registered hook names, sorted, with their descriptions.
func Known() [][2]string {
	mu.Lock()
	defer mu.Unlock()
	out := make([][2]string, 0, len(known))
	for n, d := range known {
		out = append(out, [2]string{n, d})
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// Arm makes the hook named name kill the process on its (skip+1)-th hit.
func Arm(name string, skip int) {
	ArmFunc(name, skip, Kill)
}

// ArmSpec arms the hook a spec names: "name" or "name:skip" (the hook
// kills on hit skip+1). A name no package registered, or a skip that is
// not a count, is an error and arms nothing: a mistyped hook would
// otherwise run a kill test that never kills.
func ArmSpec(spec string) (name string, skip int, err error) {
	name, skipS, hasSkip := strings.Cut(spec, ":")
	if hasSkip {
		n, err := strconv.Atoi(skipS)
		if err != nil || n < 0 {
			return "", 0, fmt.Errorf("%q: the skip after the colon must be a count of hits, 0 or more", spec)
		}
		skip = n
	}
	var names []string
	for _, k := range Known() {
		names = append(names, k[0])
	}
	if !slices.Contains(names, name) {
		return "", 0, fmt.Errorf("%q: no crash hook is named %q (known: %s)", spec, name, strings.Join(names, ", "))
	}
	Arm(name, skip)
	return name, skip, nil
}

// ArmFunc is Arm with a custom action, for in-process tests (for example
// panicking or returning through a channel instead of dying).
func ArmFunc(name string, skip int, act func(name string)) {
	mu.Lock()
	defer mu.Unlock()
	hooks[name] = &hook{skip: int64(skip), act: act}
	armed.Store(true)
}

// Disarm removes every armed hook and failure point.
func Disarm() {
	mu.Lock()
	defer mu.Unlock()
	hooks = map[string]*hook{}
	armed.Store(false)
	failures = map[string]func() error{}
	failArmed.Store(false)
}

var (
	failArmed atomic.Bool
	failures  = map[string]func() error{}
)

// ArmErr makes Err(name) return fn's result (nil lets the call through)
// until Disarm. For in-process tests.
func ArmErr(name string, fn func() error) {
	mu.Lock()
	defer mu.Unlock()
	failures[name] = fn
	failArmed.Store(true)
}

// Err returns the error armed at the failure point name, or nil. It costs
// one atomic load when nothing is armed.
func Err(name string) error {
	if !failArmed.Load() {
		return nil
	}
	mu.Lock()
	fn := failures[name]
	mu.Unlock()
	if fn == nil {
		return nil
	}
	return fn()
}

// Hit marks that execution reached the named point. If the hook is armed and
// its skip count is used up, the armed action runs (by default: the process
// dies).
func Hit(name string) {
	if !armed.Load() {
		return
	}
	mu.Lock()
	h := hooks[name]
	mu.Unlock()
	if h == nil {
		return
	}
	if h.hits.Add(1) <= h.skip {
		return
	}
	h.act(name)
}

// Kill reports the hook on stderr and SIGKILLs the current process.
func Kill(name string) {
	fmt.Fprintf(os.Stderr, "FAULT %s\n", name)
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // SIGKILL is not deliverable to a blocked handler; never return
}

// Marker is the line Kill writes; parents search child output for it.
func Marker(name string) string { return "FAULT " + name }
