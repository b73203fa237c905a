package pebble

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/pushd/pushd/push"
)

// Own-channel presence (GET /1.1/installations/<id>/presence): per device three keys, written
// on connect, disconnect and ack, never per message write. Not synced: presence lost in a
// crash only makes the answer older.
const (
	presenceConn = 'c' // while connected: unix ms of the connect, then the node's name
	presenceSeen = 's' // unix ms the last connection ended
	presenceAck  = 'a' // unix ms of the last ack
)

func presenceKey(app, iid string, kind byte) []byte {
	return append(appendStr(appendStr([]byte{tPresence}, app), iid), kind)
}

// deletePresence adds the deletion of iid's presence to b: its installation is deleted. Not
// in deleteInstRows: an import's stale registration gives its device ids, and with them the
// presence, to the newer installation.
func deletePresence(b *pebble.Batch, app, iid string) error {
	if iid == "" {
		return nil
	}
	for _, kind := range []byte{presenceConn, presenceSeen, presenceAck} {
		if err := b.Delete(presenceKey(app, iid, kind), nil); err != nil {
			return err
		}
	}
	return nil
}

func msBytes(t time.Time) []byte { return binary.BigEndian.AppendUint64(nil, uint64(t.UnixMilli())) }

// DeviceOnline records that node holds iid's connection since at.
func (s *Store) DeviceOnline(ctx context.Context, app, iid, node string, at time.Time) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	defer s.locks.lock(stripeOf("z", app, iid))()
	if err := s.db.Set(presenceKey(app, iid, presenceConn), append(msBytes(at), node...), pebble.NoSync); err != nil {
		return fmt.Errorf("cannot record the connection of installation %s of app %s: %w", iid, app, err)
	}
	return nil
}

// DeviceOffline records that iid's connection on node ended at at. A connection another node
// holds by now is left as it is (the device moved).
func (s *Store) DeviceOffline(ctx context.Context, app, iid, node string, at time.Time) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	defer s.locks.lock(stripeOf("z", app, iid))()
	b := s.db.NewBatch()
	defer b.Close()
	ck := presenceKey(app, iid, presenceConn)
	v, found, err := s.getInto(nil, ck)
	if err != nil {
		return fmt.Errorf("cannot read the connection of installation %s of app %s: %w", iid, app, err)
	}
	if found && len(v) >= 8 && string(v[8:]) == node {
		if err := b.Delete(ck, nil); err != nil {
			return err
		}
	}
	if err := b.Set(presenceKey(app, iid, presenceSeen), msBytes(at), nil); err != nil {
		return err
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("cannot record the disconnect of installation %s of app %s: %w", iid, app, err)
	}
	return nil
}

// DeviceAcked records iid's last ack at at.
func (s *Store) DeviceAcked(ctx context.Context, app, iid string, at time.Time) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	if err := s.db.Set(presenceKey(app, iid, presenceAck), msBytes(at), pebble.NoSync); err != nil {
		return fmt.Errorf("cannot record the ack of installation %s of app %s: %w", iid, app, err)
	}
	return nil
}

// DevicePresence reads what DeviceOnline, DeviceOffline and DeviceAcked recorded of iid.
func (s *Store) DevicePresence(ctx context.Context, app, iid string) (push.DevicePresence, error) {
	var p push.DevicePresence
	if err := s.enter(); err != nil {
		return p, err
	}
	defer s.exit()
	ms := func(v []byte) time.Time {
		if len(v) < 8 {
			return time.Time{}
		}
		return time.UnixMilli(int64(binary.BigEndian.Uint64(v))).UTC()
	}
	for _, kind := range []byte{presenceConn, presenceSeen, presenceAck} {
		v, found, err := s.getInto(nil, presenceKey(app, iid, kind))
		if err != nil {
			return p, fmt.Errorf("cannot read the presence of installation %s of app %s: %w", iid, app, err)
		}
		if !found {
			continue
		}
		switch kind {
		case presenceConn:
			p.ConnectedAt = ms(v)
			if len(v) > 8 {
				p.Node = string(v[8:])
			}
		case presenceSeen:
			p.LastSeen = ms(v)
		case presenceAck:
			p.LastAck = ms(v)
		}
	}
	return p, nil
}

// ConnectedNodes implements store.Store: one point read per installation.
func (s *Store) ConnectedNodes(ctx context.Context, app string, iids []string, nodes []string) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	var v []byte
	for i, iid := range iids {
		nodes[i] = ""
		var found bool
		var err error
		v, found, err = s.getInto(v[:0], presenceKey(app, iid, presenceConn))
		if err != nil {
			return fmt.Errorf("cannot read the connections of %d installations of app %s: %w", len(iids), app, err)
		}
		if found && len(v) > 8 {
			nodes[i] = string(v[8:])
		}
	}
	return nil
}
