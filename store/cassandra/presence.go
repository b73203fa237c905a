package cassandra

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gocql/gocql"
	"golang.org/x/sync/errgroup"

	"github.com/pushd/pushd/push"
)

// Own-channel presence (schema.cql: presence_conns, presence). A connection is a row per node,
// so the node that recorded a connection deletes exactly its own row on disconnect and a device
// that moved to another node meanwhile keeps that node's row, without an LWT.
const (
	cqlPresenceConnPut   = `INSERT INTO presence_conns (app_id, installation_id, node, connected_at) VALUES (?, ?, ?, ?)`
	cqlPresenceConnDel   = `DELETE FROM presence_conns WHERE app_id = ? AND installation_id = ? AND node = ?`
	cqlPresenceConnList  = `SELECT node, connected_at FROM presence_conns WHERE app_id = ? AND installation_id = ?`
	cqlPresenceConnsDrop = `DELETE FROM presence_conns WHERE app_id = ? AND installation_id = ?`
	cqlPresenceSeen      = `UPDATE presence SET last_seen = ? WHERE app_id = ? AND installation_id = ?`
	cqlPresenceAck       = `UPDATE presence SET last_ack = ? WHERE app_id = ? AND installation_id = ?`
	cqlPresenceGet       = `SELECT last_seen, last_ack FROM presence WHERE app_id = ? AND installation_id = ?`
	cqlPresenceDrop      = `DELETE FROM presence WHERE app_id = ? AND installation_id = ?`
)

// connectedNodesParallel bounds the single-partition reads ConnectedNodes runs at once.
const connectedNodesParallel = 16

// DeviceOnline implements store.Store.
func (s *Store) DeviceOnline(ctx context.Context, app, iid, node string, at time.Time) error {
	if err := s.q(ctx, cqlPresenceConnPut, app, iid, node, at).Exec(); err != nil {
		return fmt.Errorf("cannot record the connection of installation %s of app %s: %w", iid, app, err)
	}
	return nil
}

// DeviceOffline implements store.Store: node's row goes, another node's stays.
func (s *Store) DeviceOffline(ctx context.Context, app, iid, node string, at time.Time) error {
	if err := s.q(ctx, cqlPresenceConnDel, app, iid, node).Exec(); err != nil {
		return fmt.Errorf("cannot record the disconnect of installation %s of app %s: %w", iid, app, err)
	}
	if err := s.q(ctx, cqlPresenceSeen, at, app, iid).Exec(); err != nil {
		return fmt.Errorf("cannot record the disconnect of installation %s of app %s: %w", iid, app, err)
	}
	return nil
}

// DeviceAcked implements store.Store.
func (s *Store) DeviceAcked(ctx context.Context, app, iid string, at time.Time) error {
	if err := s.q(ctx, cqlPresenceAck, at, app, iid).Exec(); err != nil {
		return fmt.Errorf("cannot record the ack of installation %s of app %s: %w", iid, app, err)
	}
	return nil
}

// DevicePresence implements store.Store.
func (s *Store) DevicePresence(ctx context.Context, app, iid string) (push.DevicePresence, error) {
	var p push.DevicePresence
	node, at, err := s.connection(ctx, app, iid)
	if err != nil {
		return p, fmt.Errorf("cannot read the presence of installation %s of app %s: %w", iid, app, err)
	}
	p.Node, p.ConnectedAt = node, at
	var seen, ack time.Time
	err = s.q(ctx, cqlPresenceGet, app, iid).Scan(&seen, &ack)
	if err != nil && !errors.Is(err, gocql.ErrNotFound) {
		return p, fmt.Errorf("cannot read the presence of installation %s of app %s: %w", iid, app, err)
	}
	p.LastSeen, p.LastAck = utcOrZero(seen), utcOrZero(ack)
	return p, nil
}

// ConnectedNodes implements store.Store: one single-partition read per installation, a few at
// a time.
func (s *Store) ConnectedNodes(ctx context.Context, app string, iids []string, nodes []string) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(connectedNodesParallel)
	for i, iid := range iids {
		g.Go(func() error {
			node, _, err := s.connection(gctx, app, iid)
			nodes[i] = node
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("cannot read the connections of %d installations of app %s: %w", len(iids), app, err)
	}
	return nil
}

// connection is the newest recorded connection of iid: its node and since when ("" none).
func (s *Store) connection(ctx context.Context, app, iid string) (string, time.Time, error) {
	it := s.q(ctx, cqlPresenceConnList, app, iid).Iter()
	var (
		node, n string
		since   time.Time
		at      time.Time
	)
	for it.Scan(&n, &at) {
		if node == "" || at.After(since) {
			node, since = n, at
		}
	}
	if err := it.Close(); err != nil {
		return "", time.Time{}, err
	}
	return node, utcOrZero(since), nil
}

func utcOrZero(t time.Time) time.Time {
	if t.IsZero() || t.UnixMilli() == 0 {
		return time.Time{}
	}
	return t.UTC()
}
