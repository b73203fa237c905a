package pebble

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/pushd/pushd/store"
)

// gatewayRow is a gateway node's advertisement as stored.
type gatewayRow struct {
	URL        string `json:"url"`
	Partitions []int  `json:"partitions"`
	ExpiresMs  int64  `json:"expires"`
}

// PutGateway implements store.Store. Not synced: an advertisement lost in a crash is written
// again by the node's next heartbeat, and a crash ends the node's ownership anyway.
func (s *Store) PutGateway(ctx context.Context, g store.Gateway) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	v, err := json.Marshal(gatewayRow{URL: g.URL, Partitions: g.Partitions, ExpiresMs: g.Expires.UnixMilli()})
	if err != nil {
		return fmt.Errorf("BUG: cannot encode gateway %s: %w", g.Node, err)
	}
	if err := s.db.Set(gatewayKey(nil, g.Node), v, pebble.NoSync); err != nil {
		return fmt.Errorf("cannot advertise gateway %s: %w", g.Node, err)
	}
	return nil
}

// DeleteGateway implements store.Store.
func (s *Store) DeleteGateway(ctx context.Context, node string) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	if err := s.db.Delete(gatewayKey(nil, node), pebble.NoSync); err != nil {
		return fmt.Errorf("cannot remove gateway %s: %w", node, err)
	}
	return nil
}

// Gateways implements store.Store. Expired rows are skipped, not deleted: a node's next
// advertisement replaces its row, and the table holds one row per node that ever ran.
func (s *Store) Gateways(ctx context.Context, now time.Time) ([]store.Gateway, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.exit()
	var out []store.Gateway
	nowMs := now.UnixMilli()
	err := s.iterate([]byte{tGateway}, []byte{tGateway + 1}, func(k, v []byte) error {
		var r gatewayRow
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("cannot decode a gateway: %w", err)
		}
		if r.ExpiresMs <= nowMs {
			return nil
		}
		node, _, err := store.DecodeKeyString(k[1:])
		if err != nil {
			return fmt.Errorf("cannot decode a gateway key: %w", err)
		}
		out = append(out, store.Gateway{Node: node, URL: r.URL, Partitions: r.Partitions, Expires: time.UnixMilli(r.ExpiresMs).UTC()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cannot list gateways: %w", err)
	}
	return out, nil
}
