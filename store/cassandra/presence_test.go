package cassandra

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

// presenceCases: the statements of the own-channel presence (TestStoreCassandraStatements).
func presenceCases(t *testing.T) {
	ctx := context.Background()

	t.Run("presence: a connection is the node's own row, a disconnect deletes only that row", func(t *testing.T) {
		calls, err := runCase(t, script{}, func(s *Store) error {
			if err := s.DeviceOnline(ctx, "a", "d1", "n1", t0); err != nil {
				return err
			}
			if err := s.DeviceAcked(ctx, "a", "d1", t0.Add(time.Second)); err != nil {
				return err
			}
			return s.DeviceOffline(ctx, "a", "d1", "n1", t0.Add(2*time.Second))
		})
		if err != nil {
			t.Fatal(err)
		}
		wantCalls(t, calls,
			one("exec", cqlPresenceConnPut, "a", "d1", "n1", t0),
			one("exec", cqlPresenceAck, t0.Add(time.Second), "a", "d1"),
			one("exec", cqlPresenceConnDel, "a", "d1", "n1"),
			one("exec", cqlPresenceSeen, t0.Add(2*time.Second), "a", "d1"))
	})

	t.Run("presence read: the newest connection of several nodes, then the seen and ack times", func(t *testing.T) {
		var p push.DevicePresence
		calls, err := runCase(t, script{
			cqlPresenceConnList: fixed(reply{rows: [][]any{{"n1", t0}, {"n2", t0.Add(time.Second)}}}),
			cqlPresenceGet:      fixed(reply{row: []any{t0.Add(-time.Minute), t0.Add(-2 * time.Minute)}}),
		}, func(s *Store) (err error) {
			p, err = s.DevicePresence(ctx, "a", "d1")
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		want := push.DevicePresence{Node: "n2", ConnectedAt: t0.Add(time.Second), LastSeen: t0.Add(-time.Minute), LastAck: t0.Add(-2 * time.Minute)}
		if p != want {
			t.Errorf("DevicePresence = %+v, want %+v", p, want)
		}
		wantCalls(t, calls, one("iter", cqlPresenceConnList, "a", "d1"), one("scan", cqlPresenceGet, "a", "d1"))
	})

	t.Run("presence of a batch: one single-partition read per installation", func(t *testing.T) {
		nodes := make([]string, 3)
		calls, err := runCase(t, script{
			cqlPresenceConnList: func(c *call) reply {
				if c.args[1] == "d2" {
					return reply{rows: [][]any{{"n2", t0}}}
				}
				return reply{}
			},
		}, func(s *Store) error { return s.ConnectedNodes(ctx, "a", []string{"d1", "d2", "d3"}, nodes) })
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(nodes, []string{"", "n2", ""}) {
			t.Errorf("ConnectedNodes = %q, want only d2 on n2", nodes)
		}
		if len(calls) != 3 {
			t.Errorf("ran %d calls, want 3 reads", len(calls))
		}
	})

	t.Run("delete installation: its presence rows go in the same batch", func(t *testing.T) {
		in := push.Installation{Route: push.Route{ObjectID: "o2", DeviceType: push.DeviceAndroid, InstallationID: "d2", UpdatedAt: t0.UnixMilli()},
			CreatedAt: t0.UnixMilli() - 1000, Doc: []byte(`{"objectId":"o2"}`)}
		bk := push.Bucket("o2", 256)
		row := []any{bk, store.AppendRoute(nil, &in.Route), in.CreatedAt, in.Doc}
		calls, err := runCase(t, script{cqlInstGet: fixed(reply{row: row})}, func(s *Store) error {
			return s.DeleteInstallation(ctx, "a", 256, "o2")
		})
		if err != nil {
			t.Fatal(err)
		}
		wantCalls(t, calls,
			one("scan", cqlInstGet, "a", "o2"),
			inBatch(
				b(cqlInstDelete, "a", "o2"),
				b(cqlBadgeDelete, "a", "o2"),
				b(cqlBucketDelete, "a", bk, push.DeviceAndroid, "o2"),
				b(cqlDeviceDelete, "a", "iid", "d2"),
				b(cqlPresenceConnsDrop, "a", "d2"),
				b(cqlPresenceDrop, "a", "d2"),
			))
	})
}
