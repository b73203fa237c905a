package pebble

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync"

	"github.com/cockroachdb/pebble/v2"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

// CreateApp implements store.Store.
func (s *Store) CreateApp(ctx context.Context, app push.App) error {
	return s.writeApp(app, true)
}

// PutApp implements store.Store.
func (s *Store) PutApp(ctx context.Context, app push.App) error {
	return s.writeApp(app, false)
}

func (s *Store) writeApp(app push.App, create bool) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	if app.ID == "" {
		return errors.New("cannot write an app without an id")
	}
	defer s.locks.lock(stripeOf("a", app.ID))()
	key := appKey(nil, app.ID)
	_, found, err := s.getInto(nil, key)
	if err != nil {
		return fmt.Errorf("cannot read app %s: %w", app.ID, err)
	}
	switch {
	case create && found:
		return fmt.Errorf("cannot create app %s: %w", app.ID, store.ErrExists)
	case !create && !found:
		return fmt.Errorf("cannot update app %s: %w", app.ID, store.ErrNotFound)
	}
	v, err := json.Marshal(app)
	if err != nil {
		return fmt.Errorf("cannot encode app %s: %w", app.ID, err)
	}
	err = s.db.Set(key, v, pebble.Sync)
	s.apps.forget(app.ID) // written or not: the next read decodes what Pebble holds
	if err != nil {
		return fmt.Errorf("cannot write app %s: %w", app.ID, err)
	}
	return nil
}

// GetApp implements store.Store.
func (s *Store) GetApp(ctx context.Context, appID string) (push.App, error) {
	if err := s.enter(); err != nil {
		return push.App{}, err
	}
	defer s.exit()
	app, gen, ok := s.apps.get(appID)
	if ok {
		return app, nil
	}
	v, err := s.get(appKey(nil, appID))
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return push.App{}, err
		}
		return push.App{}, fmt.Errorf("cannot get app %s: %w", appID, err)
	}
	if err := json.Unmarshal(v, &app); err != nil {
		return push.App{}, fmt.Errorf("cannot decode app %s: %w", appID, err)
	}
	s.apps.fill(appID, app, gen)
	return app, nil
}

// appCache keeps the apps read last, decoded: fan-out reads its push's app at every plan and
// every task (two reads of one small document per push, about 3% of intake's CPU). An app is
// forgotten when it is written (after the write, committed or not), and a read fills the cache
// only if nothing was forgotten since it looked (gen), so a document read before a write is
// never cached after it. Copies go in and out: a caller may change the app it gets.
type appCache struct {
	mu  sync.Mutex
	gen uint64
	m   map[string]push.App
}

// appCacheEntries bounds the apps kept; a full cache drops an arbitrary one.
const appCacheEntries = 4096

func (c *appCache) get(id string) (push.App, uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.m[id]
	if ok {
		a = cloneApp(a)
	}
	return a, c.gen, ok
}

func (c *appCache) fill(id string, a push.App, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	if c.m == nil {
		c.m = make(map[string]push.App)
	}
	if _, ok := c.m[id]; !ok && len(c.m) >= appCacheEntries {
		for k := range c.m {
			delete(c.m, k)
			break
		}
	}
	c.m[id] = cloneApp(a)
}

func (c *appCache) forget(id string) {
	c.mu.Lock()
	c.gen++
	delete(c.m, id)
	c.mu.Unlock()
}

// cloneApp is a copy of a that shares nothing a caller may change: every field of push.App
// but Credentials is a value (TestStoreAppCacheCopies holds it), and the credentials'
// documents are replaced, never changed in place.
func cloneApp(a push.App) push.App {
	a.Credentials = maps.Clone(a.Credentials)
	return a
}

// ListApps implements store.Store.
func (s *Store) ListApps(ctx context.Context) ([]push.App, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.exit()
	var apps []push.App
	lower := []byte{tApps}
	err := s.iterate(lower, prefixEnd(lower), func(_, v []byte) error {
		var app push.App
		if err := json.Unmarshal(v, &app); err != nil {
			return err
		}
		apps = append(apps, app)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cannot list apps: %w", err)
	}
	return apps, nil
}
