package pebble

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

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
	if err := s.db.Set(key, v, pebble.Sync); err != nil {
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
	v, err := s.get(appKey(nil, appID))
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return push.App{}, err
		}
		return push.App{}, fmt.Errorf("cannot get app %s: %w", appID, err)
	}
	var app push.App
	if err := json.Unmarshal(v, &app); err != nil {
		return push.App{}, fmt.Errorf("cannot decode app %s: %w", appID, err)
	}
	return app, nil
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
