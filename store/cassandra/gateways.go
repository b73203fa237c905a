package cassandra

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/pushd/pushd/store"
)

// Gateway registry (CLUSTER.md: gateways). A row lives until its TTL (the advertisement's
// expiry, rounded up to a second); expires is checked too, at the reader's clock. Every row sits
// in one partition (registry = gatewayRegistry): a cluster has a handful of gateway nodes, and
// the routers read them all at once.
const (
	cqlGatewayPut    = `INSERT INTO gateways (registry, node, url, partitions, expires) VALUES (?, ?, ?, ?, ?) USING TTL ?`
	cqlGatewayDelete = `DELETE FROM gateways WHERE registry = ? AND node = ?`
	cqlGatewayList   = `SELECT node, url, partitions, expires FROM gateways WHERE registry = ?`
)

const gatewayRegistry = "gateways"

// PutGateway implements store.Store.
func (s *Store) PutGateway(ctx context.Context, g store.Gateway) error {
	ttl := int(math.Ceil(time.Until(g.Expires).Seconds()))
	if ttl < 1 {
		return nil // expired already: nothing to advertise
	}
	if err := s.q(ctx, cqlGatewayPut, gatewayRegistry, g.Node, g.URL, g.Partitions, g.Expires, ttl).Exec(); err != nil {
		return fmt.Errorf("cannot advertise gateway %s: %w", g.Node, err)
	}
	return nil
}

// DeleteGateway implements store.Store.
func (s *Store) DeleteGateway(ctx context.Context, node string) error {
	if err := s.q(ctx, cqlGatewayDelete, gatewayRegistry, node).Exec(); err != nil {
		return fmt.Errorf("cannot remove gateway %s: %w", node, err)
	}
	return nil
}

// Gateways implements store.Store (one partition of a few rows).
func (s *Store) Gateways(ctx context.Context, now time.Time) ([]store.Gateway, error) {
	it := s.q(ctx, cqlGatewayList, gatewayRegistry).Iter()
	var (
		out []store.Gateway
		g   store.Gateway
	)
	for it.Scan(&g.Node, &g.URL, &g.Partitions, &g.Expires) {
		if g.Expires.After(now) {
			g.Expires = g.Expires.UTC()
			out = append(out, g)
		}
		g = store.Gateway{}
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("cannot list gateways: %w", err)
	}
	slices.SortFunc(out, func(a, b store.Gateway) int {
		switch {
		case a.Node < b.Node:
			return -1
		case a.Node > b.Node:
			return 1
		}
		return 0
	})
	return out, nil
}
