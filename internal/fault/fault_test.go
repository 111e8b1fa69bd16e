package fault

import (
	"errors"
	"testing"
)

func TestArmSkipAndDisarm(t *testing.T) {
	name := Register("test.point", "a point used by this test")
	defer Disarm()
	fired := 0
	Hit(name) // nothing armed: no effect
	ArmFunc(name, 2, func(string) { fired++ })
	for i := 0; i < 5; i++ {
		Hit(name)
	}
	if fired != 3 {
		t.Fatalf("fired %d times after skip 2 of 5 hits, want 3", fired)
	}
	Hit("test.other") // another name: no effect
	Disarm()
	Hit(name)
	if fired != 3 {
		t.Fatalf("fired after Disarm: %d", fired)
	}
	found := false
	for _, k := range Known() {
		found = found || k[0] == name && k[1] == "a point used by this test"
	}
	if !found {
		t.Fatalf("Known() lacks %s: %v", name, Known())
	}
	if Marker(name) != "FAULT test.point" {
		t.Fatalf("Marker: got %q", Marker(name))
	}
}

func TestArmErr(t *testing.T) {
	defer Disarm()
	if err := Err("test.fail"); err != nil {
		t.Fatalf("nothing armed: %v", err)
	}
	boom := errors.New("boom")
	calls := 0
	ArmErr("test.fail", func() error {
		calls++
		if calls == 2 {
			return nil
		}
		return boom
	})
	if err := Err("test.fail"); !errors.Is(err, boom) {
		t.Fatalf("armed: %v", err)
	}
	if err := Err("test.fail"); err != nil {
		t.Fatalf("fn let the second call through: %v", err)
	}
	if err := Err("test.other"); err != nil {
		t.Fatalf("another name: %v", err)
	}
	Disarm()
	if err := Err("test.fail"); err != nil || calls != 2 {
		t.Fatalf("after Disarm: %v (calls %d)", err, calls)
	}
}

// TestArmSpec: "name" and "name:skip" arm a registered hook; an unknown
// name or a skip that is not a count is refused and arms nothing.
func TestArmSpec(t *testing.T) {
	name := Register("test.spec", "a point used by this test")
	defer Disarm()
	for _, bad := range []string{"test.nosuch", "test.spec:x", "test.spec:-1", ""} {
		if _, _, err := ArmSpec(bad); err == nil {
			t.Errorf("ArmSpec(%q) armed", bad)
		}
		if armed.Load() {
			t.Fatalf("ArmSpec(%q) failed yet armed a hook", bad)
		}
	}
	if n, skip, err := ArmSpec(name + ":3"); err != nil || n != name || skip != 3 {
		t.Fatalf("ArmSpec(%q) = %q, %d, %v", name+":3", n, skip, err)
	}
	if !armed.Load() {
		t.Fatalf("ArmSpec(%q) armed nothing", name+":3")
	}
}
