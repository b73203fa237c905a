package cassandra

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

// clusterLimitCases are TestStoreCassandraStatements' cases for the statements of issue 15
// item 2: device-id claims by LWT in PutInstallation, call counts, app blocks and members.
// cql_test.go checks their texts against schema.cql (columns, partition keys, LWT tables,
// counters, TTLs); these check what the store runs, with which values, consistency and retry
// policy.
func clusterLimitCases(t *testing.T) {
	ctx := context.Background()
	inst := func(oid, iid, tok string, channels ...string) push.Installation {
		return push.Installation{Route: push.Route{ObjectID: oid, DeviceType: "android", InstallationID: iid, DeviceToken: tok,
			Channels: channels, UpdatedAt: t0.UnixMilli()}, CreatedAt: t0.UnixMilli() - 1000, Doc: []byte(`{"objectId":"` + oid + `"}`)}
	}
	oldRow := func(in push.Installation) []any {
		return []any{push.Bucket(in.ObjectID, 256), store.AppendRoute(nil, &in.Route), in.CreatedAt, in.Doc}
	}
	put := func(in push.Installation) func(s *Store) error {
		return func(s *Store) error { return s.PutInstallation(ctx, "a", 256, in) }
	}
	bk := push.Bucket("o1", 256)
	// batch is the script key of ExecuteBatch (a batch call has no statement of its own).
	const batch = ""

	t.Run("device claim: a free row is taken by INSERT IF NOT EXISTS, released only if still ours", func(t *testing.T) {
		// The statements' conditions are what makes the claim safe across nodes.
		if !strings.HasSuffix(cqlDeviceClaim, " IF NOT EXISTS") {
			t.Errorf("%q does not claim only a free row", cqlDeviceClaim)
		}
		if !strings.HasSuffix(cqlDeviceRelease, " IF object_id = ?") {
			t.Errorf("%q may release another installation's row", cqlDeviceRelease)
		}
	})

	t.Run("put keeping its device ids: nothing claimed, their rows rewritten in the batch for the TTL", func(t *testing.T) {
		old := inst("o1", "", "tok1", "a")
		in := inst("o1", "", "tok1", "a", "b")
		calls, err := runCase(t, script{cqlInstGet: fixed(reply{row: oldRow(old)})}, put(in))
		if err != nil {
			t.Fatal(err)
		}
		wantCalls(t, calls,
			one("scan", cqlInstGet, "a", "o1"),
			inBatch(
				b(cqlInstInsert, "a", "o1", bk, "android", anyv, in.CreatedAt, in.UpdatedAt, in.Doc),
				b(cqlBucketInsert, "a", bk, "android", "o1", anyv, in.Doc),
				b(cqlChannelInsert, "a", "a", bk, "android", "o1", anyv, in.Doc),
				b(cqlChannelInsert, "a", "b", bk, "android", "o1", anyv, in.Doc),
				b(cqlDeviceInsert, "a", "token", "tok1", "o1"),
			))
	})

	t.Run("device claim lost to another installation: ErrDuplicate, nothing written, the ids claimed before released", func(t *testing.T) {
		calls, err := runCase(t, script{
			cqlDeviceClaim: func(c *call) reply {
				if c.args[1] == "token" {
					return reply{notApp: true, prev: map[string]any{"object_id": "o2"}}
				}
				return reply{}
			},
		}, put(inst("o1", "iid1", "tok1")))
		if !errors.Is(err, store.ErrDuplicate) {
			t.Fatalf("PutInstallation = %v, want ErrDuplicate", err)
		}
		wantCalls(t, calls,
			one("scan", cqlInstGet, "a", "o1"),
			one("cas", cqlDeviceClaim, "a", "iid", "iid1", "o1"),
			one("cas", cqlDeviceClaim, "a", "token", "tok1", "o1"),
			one("cas", cqlDeviceRelease, "a", "iid", "iid1", "o1"))
	})

	t.Run("device claim that finds the row ours already: held, and rewritten in the batch for its TTL", func(t *testing.T) {
		calls, err := runCase(t, script{
			cqlDeviceClaim: fixed(reply{notApp: true, prev: map[string]any{"object_id": "o1"}}),
		}, put(inst("o1", "", "tok1")))
		if err != nil {
			t.Fatal(err)
		}
		wantCalls(t, calls,
			one("scan", cqlInstGet, "a", "o1"),
			one("cas", cqlDeviceClaim, "a", "token", "tok1", "o1"),
			inBatch(
				b(cqlDeadDelete, "a", "tok1"),
				b(cqlInstInsert, "a", "o1", bk, "android", anyv, anyv, anyv, anyv),
				b(cqlBucketInsert, "a", bk, "android", "o1", anyv, anyv),
				b(cqlDeviceInsert, "a", "token", "tok1", "o1"),
			))
	})

	// A timed-out claim is not run again (it would find its own row): a read at SERIAL decides.
	for _, tc := range []struct {
		name    string
		serial  reply // the SERIAL read's answer
		wantErr func(error) bool
		after   []step // the calls after the claim and the read
	}{
		{
			name:    "ours: the put goes on with its batch",
			serial:  reply{row: []any{"o1"}},
			wantErr: func(err error) bool { return err == nil },
			after: []step{inBatch(
				b(cqlDeadDelete, "a", "tok1"),
				b(cqlInstInsert, "a", "o1", bk, "android", anyv, anyv, anyv, anyv),
				b(cqlBucketInsert, "a", bk, "android", "o1", anyv, anyv),
			)},
		},
		{
			name:    "another's: ErrDuplicate, nothing written",
			serial:  reply{row: []any{"o2"}},
			wantErr: func(err error) bool { return errors.Is(err, store.ErrDuplicate) },
		},
		{
			name:   "nothing: the claim failed with its timeout (not a duplicate), nothing written",
			serial: reply{},
			wantErr: func(err error) bool {
				return errors.Is(err, writeTimeout) && !errors.Is(err, store.ErrDuplicate)
			},
		},
		{
			name:   "the read fails too: the outcome stays unknown, and the claim is given back",
			serial: reply{err: &gocql.RequestErrReadTimeout{}},
			wantErr: func(err error) bool {
				return errors.Is(err, writeTimeout) && !errors.Is(err, store.ErrDuplicate)
			},
			after: []step{one("cas", cqlDeviceRelease, "a", "token", "tok1", "o1")},
		},
	} {
		t.Run("timed-out device claim decided at SERIAL, "+tc.name, func(t *testing.T) {
			calls, err := runCase(t, script{
				cqlDeviceClaim: fixed(reply{err: writeTimeout}),
				cqlDeviceGet:   fixed(tc.serial),
			}, put(inst("o1", "", "tok1")))
			if !tc.wantErr(err) {
				t.Fatalf("PutInstallation = %v", err)
			}
			wantCalls(t, calls, append([]step{
				one("scan", cqlInstGet, "a", "o1"),
				one("cas", cqlDeviceClaim, "a", "token", "tok1", "o1"),
				one("scan", cqlDeviceGet, "a", "token", "tok1"),
			}, tc.after...)...)
			if len(calls) > 2 && calls[2].cons != serialRead {
				t.Errorf("the read after the timeout ran at %v, want SERIAL", calls[2].cons)
			}
		})
	}

	t.Run("a batch that failed applied nothing: its claims are released", func(t *testing.T) {
		calls, err := runCase(t, script{batch: fixed(reply{err: &gocql.RequestErrUnavailable{}})}, put(inst("o1", "iid1", "tok1")))
		if err == nil {
			t.Fatal("PutInstallation succeeded with its batch refused")
		}
		wantCalls(t, calls,
			one("scan", cqlInstGet, "a", "o1"),
			one("cas", cqlDeviceClaim, "a", "iid", "iid1", "o1"),
			one("cas", cqlDeviceClaim, "a", "token", "tok1", "o1"),
			inBatch(
				b(cqlDeadDelete, "a", "iid1"),
				b(cqlDeadDelete, "a", "tok1"),
				b(cqlInstInsert, "a", "o1", bk, "android", anyv, anyv, anyv, anyv),
				b(cqlBucketInsert, "a", bk, "android", "o1", anyv, anyv),
			),
			one("cas", cqlDeviceRelease, "a", "iid", "iid1", "o1"),
			one("cas", cqlDeviceRelease, "a", "token", "tok1", "o1"))
	})

	t.Run("a batch that timed out may apply: its claims stay", func(t *testing.T) {
		calls, err := runCase(t, script{batch: fixed(reply{err: &gocql.RequestErrWriteTimeout{WriteType: "BATCH"}})}, put(inst("o1", "", "tok1")))
		if err == nil {
			t.Fatal("PutInstallation succeeded with its batch timed out")
		}
		for _, c := range calls {
			if c.stmt == cqlDeviceRelease {
				t.Error("released a claim of a batch that may apply")
			}
		}
	})

	t.Run("call counts: added once (no retry, no batch), read back, what fitted granted", func(t *testing.T) {
		var granted int
		calls, err := runCase(t, script{cqlCallsGet: fixed(reply{row: []any{int64(105)}})}, func(s *Store) error {
			var err error
			granted, err = s.ReserveCalls(ctx, "a", 28_333_333, 10, 100)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if granted != 5 {
			t.Errorf("granted %d of 10 with 105 counted against 100, want 5", granted)
		}
		wantCalls(t, calls, one("exec", cqlCallsAdd, int64(10), "a", int64(28_333_333)), one("scan", cqlCallsGet, "a", int64(28_333_333)))
		if calls[0].retry != nil {
			t.Errorf("the counter update runs with retry policy %v", calls[0].retry)
		}
	})

	t.Run("call counts: a timed-out addition is an error, not run again", func(t *testing.T) {
		calls, err := runCase(t, script{cqlCallsAdd: fixed(reply{err: &gocql.RequestErrWriteTimeout{WriteType: "COUNTER"}})}, func(s *Store) error {
			_, err := s.ReserveCalls(ctx, "a", 1, 3, 100)
			return err
		})
		if err == nil {
			t.Fatal("a timed-out counter update reported a reservation")
		}
		wantCalls(t, calls, one("exec", cqlCallsAdd, int64(3), "a", int64(1)))
	})

	t.Run("app block: written with a TTL ending with the block; a longer block is kept", func(t *testing.T) {
		until := time.Now().Add(time.Minute).UTC()
		calls, err := runCase(t, script{}, func(s *Store) error { return s.BlockApp(ctx, "a", until) })
		if err != nil {
			t.Fatal(err)
		}
		wantCalls(t, calls, one("scan", cqlBlockGet, "a"), one("exec", cqlBlockSet, anyv, until, "a"))
		if ttl, ok := calls[1].args[0].(int); !ok || ttl < 59 || ttl > 60 {
			t.Errorf("block written with TTL %v, want 60 s (its end, rounded up)", calls[1].args[0])
		}
		calls, err = runCase(t, script{cqlBlockGet: fixed(reply{row: []any{until.Add(time.Minute)}})}, func(s *Store) error {
			return s.BlockApp(ctx, "a", until)
		})
		if err != nil {
			t.Fatal(err)
		}
		wantCalls(t, calls, one("scan", cqlBlockGet, "a"))
	})

	t.Run("app block: a row past its end (not yet gone by TTL) blocks nothing", func(t *testing.T) {
		var got time.Time
		calls, err := runCase(t, script{cqlBlockGet: fixed(reply{row: []any{t0.Add(-time.Second)}})}, func(s *Store) error {
			var err error
			got, err = s.AppBlocked(ctx, "a", t0)
			return err
		})
		if err != nil || !got.IsZero() {
			t.Fatalf("AppBlocked = %v, %v, want not blocked", got, err)
		}
		wantCalls(t, calls, one("scan", cqlBlockGet, "a"))
	})

	t.Run("members: a row with the member's TTL, counted in the group's one partition", func(t *testing.T) {
		var live int
		calls, err := runCase(t, script{cqlMemberList: fixed(reply{rows: [][]any{
			{t0.Add(15 * time.Second)}, {t0.Add(5 * time.Second)}, {t0.Add(-time.Second)}, // the last expired
		}})}, func(s *Store) error {
			var err error
			live, err = s.RegisterMember(ctx, "senders", "n1", t0, 15*time.Second)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if live != 2 {
			t.Errorf("counted %d live members, want 2", live)
		}
		wantCalls(t, calls, one("exec", cqlMemberSet, 15, t0.Add(15*time.Second), "senders", "n1"), one("iter", cqlMemberList, "senders"))
	})

	t.Run("members: a failed count is an error", func(t *testing.T) {
		_, err := runCase(t, script{cqlMemberList: fixed(reply{err: fmt.Errorf("read timeout")})}, func(s *Store) error {
			_, err := s.RegisterMember(ctx, "senders", "n1", t0, 15*time.Second)
			return err
		})
		if err == nil {
			t.Fatal("RegisterMember counted members it could not read")
		}
	})
}
