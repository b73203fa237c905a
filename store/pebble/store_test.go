package pebble

import (
	"errors"
	"strings"
	"testing"

	"github.com/pushd/pushd/store"
	"github.com/pushd/pushd/store/storetest"
)

func openTest(t testing.TB) *Store {
	t.Helper()
	s, err := Open(t.TempDir(), Options{CacheSize: 8 << 20, MemTableSize: 4 << 20})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestStorePebbleContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openTest(t) })
}

func TestStoreOpenInUse(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(dir, Options{})
	if err == nil || !strings.Contains(err.Error(), "data directory "+dir+" is in use by another process") {
		t.Fatalf("second Open = %v, want an in-use error", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); !errors.Is(err, store.ErrClosed) {
		t.Errorf("second Close = %v, want ErrClosed", err)
	}
	if _, err := s.GetApp(t.Context(), "x"); !errors.Is(err, store.ErrClosed) {
		t.Errorf("GetApp after Close = %v, want ErrClosed", err)
	}
	// Closed: the directory can be opened again.
	s2, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("reopen after Close: %v", err)
	}
	_ = s2.Close()
}
