package cachetest

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/skidata/skidata/ports"
)

// Deadline bounds the wait for an entry to expire.
const Deadline = 10 * time.Second

// Factory returns an empty cache for one test; the factory registers its own
// cleanup with t.
type Factory func(t *testing.T) ports.Cache

// Run runs every contract case in parallel, each on its own cache.
func Run(t *testing.T, newCache Factory) {
	cases := []struct {
		name string
		fn   func(t *testing.T, c ports.Cache)
	}{
		{"MissOnUnsetKey", missOnUnsetKey},
		{"SetThenGetReturnsTheBytes", setThenGet},
		{"SetReplacesTheValue", setReplaces},
		{"EmptyValueIsAHit", emptyValueIsAHit},
		{"DeleteRemovesEveryKeyGiven", deleteRemovesEveryKey},
		{"DeleteOfMissingKeyIsNoError", deleteMissing},
		{"EntryExpiresAfterItsTTL", entryExpires},
		{"KeysAreIndependent", keysAreIndependent},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newCache(t))
		})
	}
}

var ctx = context.Background()

func mustSet(t *testing.T, c ports.Cache, key string, v []byte, ttl time.Duration) {
	t.Helper()
	if err := c.Set(ctx, key, v, ttl); err != nil {
		t.Fatalf("Set(%q): %v", key, err)
	}
}

func get(t *testing.T, c ports.Cache, key string) ([]byte, bool) {
	t.Helper()
	v, ok, err := c.Get(ctx, key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	return v, ok
}

func missOnUnsetKey(t *testing.T, c ports.Cache) {
	if v, ok := get(t, c, "never-set"); ok {
		t.Errorf("Get of a key never set = %q, hit; want a miss", v)
	}
}

func setThenGet(t *testing.T, c ports.Cache) {
	want := []byte{0, 1, 2, 255, '\n', 'x'}
	mustSet(t, c, "k", want, time.Minute)
	want[0] = 9 // the cache must not keep the caller's slice
	if v, ok := get(t, c, "k"); !ok || !bytes.Equal(v, []byte{0, 1, 2, 255, '\n', 'x'}) {
		t.Errorf("Get after Set = %v (hit %v); want the bytes set", v, ok)
	}
}

func setReplaces(t *testing.T, c ports.Cache) {
	mustSet(t, c, "k", []byte("old"), time.Minute)
	mustSet(t, c, "k", []byte("new"), time.Minute)
	if v, ok := get(t, c, "k"); !ok || string(v) != "new" {
		t.Errorf("Get after two Sets = %q (hit %v); want \"new\"", v, ok)
	}
}

func emptyValueIsAHit(t *testing.T, c ports.Cache) {
	mustSet(t, c, "empty", []byte{}, time.Minute)
	if v, ok := get(t, c, "empty"); !ok || len(v) != 0 {
		t.Errorf("Get of an empty value = %q (hit %v); want an empty hit", v, ok)
	}
}

func deleteRemovesEveryKey(t *testing.T, c ports.Cache) {
	for i := range 5 {
		mustSet(t, c, fmt.Sprint("k", i), []byte{byte(i)}, time.Minute)
	}
	if err := c.Delete(ctx, "k0", "k2", "k4"); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		_, ok := get(t, c, fmt.Sprint("k", i))
		if want := i%2 == 1; ok != want {
			t.Errorf("k%d hit = %v after deleting k0, k2, k4; want %v", i, ok, want)
		}
	}
}

func deleteMissing(t *testing.T, c ports.Cache) {
	if err := c.Delete(ctx, "nothing-here"); err != nil {
		t.Errorf("Delete of a missing key: %v", err)
	}
	if err := c.Delete(ctx); err != nil {
		t.Errorf("Delete of no keys: %v", err)
	}
}

func entryExpires(t *testing.T, c ports.Cache) {
	mustSet(t, c, "short", []byte("v"), 50*time.Millisecond)
	mustSet(t, c, "long", []byte("v"), time.Hour)
	deadline := time.Now().Add(Deadline)
	for {
		if _, ok := get(t, c, "short"); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("an entry set with a 50ms TTL was still there after %s", Deadline)
		}
		time.Sleep(10 * time.Millisecond) // polling interval, not synchronisation
	}
	if _, ok := get(t, c, "long"); !ok {
		t.Error("an entry with a one-hour TTL expired together with the short one")
	}
}

func keysAreIndependent(t *testing.T, c ports.Cache) {
	mustSet(t, c, "a:1", []byte("one"), time.Minute)
	mustSet(t, c, "a:10", []byte("ten"), time.Minute)
	if err := c.Delete(ctx, "a:1"); err != nil {
		t.Fatal(err)
	}
	if v, ok := get(t, c, "a:10"); !ok || string(v) != "ten" {
		t.Errorf("deleting a:1 touched a:10: %q (hit %v)", v, ok)
	}
}
