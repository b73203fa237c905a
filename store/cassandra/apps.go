package cassandra

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

const (
	cqlAppInsert = `INSERT INTO apps (app_id, doc) VALUES (?, ?) IF NOT EXISTS`
	cqlAppUpdate = `UPDATE apps SET doc = ? WHERE app_id = ? IF EXISTS`
	cqlAppGet    = `SELECT doc FROM apps WHERE app_id = ?`
	cqlAppList   = `SELECT doc FROM apps`
)

// CreateApp implements store.Store (LWT: two creators, one wins; app documents hold random
// keys, so a SERIAL read finding ours after a timeout means ours applied).
func (s *Store) CreateApp(ctx context.Context, app push.App) error {
	doc, err := json.Marshal(app)
	if err != nil {
		return fmt.Errorf("cannot encode app %s: %w", app.ID, err)
	}
	applied, err := s.cas(ctx, s.q(ctx, cqlAppInsert, app.ID, doc), map[string]any{}, s.serialDocIs(cqlAppGet, doc, app.ID))
	if err != nil {
		return fmt.Errorf("cannot create app %s: %w", app.ID, err)
	}
	if !applied {
		return fmt.Errorf("cannot create app %s: %w", app.ID, store.ErrExists)
	}
	return nil
}

// PutApp implements store.Store.
func (s *Store) PutApp(ctx context.Context, app push.App) error {
	doc, err := json.Marshal(app)
	if err != nil {
		return fmt.Errorf("cannot encode app %s: %w", app.ID, err)
	}
	applied, err := s.cas(ctx, s.q(ctx, cqlAppUpdate, doc, app.ID), map[string]any{}, s.serialDocIs(cqlAppGet, doc, app.ID))
	if err != nil {
		return fmt.Errorf("cannot update app %s: %w", app.ID, err)
	}
	if !applied {
		return fmt.Errorf("cannot update app %s: %w", app.ID, store.ErrNotFound)
	}
	return nil
}

// GetApp implements store.Store.
func (s *Store) GetApp(ctx context.Context, appID string) (push.App, error) {
	var doc []byte
	var app push.App
	if err := s.q(ctx, cqlAppGet, appID).Scan(&doc); err != nil {
		if err = notFound(err); errors.Is(err, store.ErrNotFound) {
			return app, err
		}
		return app, fmt.Errorf("cannot get app %s: %w", appID, err)
	}
	if err := json.Unmarshal(doc, &app); err != nil {
		return app, fmt.Errorf("cannot decode app %s: %w", appID, err)
	}
	return app, nil
}

// ListApps implements store.Store (a full scan of a small table).
func (s *Store) ListApps(ctx context.Context) ([]push.App, error) {
	it := s.q(ctx, cqlAppList).Iter()
	var (
		doc  []byte
		apps []push.App
	)
	for it.Scan(&doc) {
		var app push.App
		if err := json.Unmarshal(doc, &app); err != nil {
			_ = it.Close()
			return nil, fmt.Errorf("cannot decode an app: %w", err)
		}
		apps = append(apps, app)
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("cannot list apps: %w", err)
	}
	return apps, nil
}
