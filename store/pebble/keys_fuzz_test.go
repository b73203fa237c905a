package pebble

import (
	"bytes"
	"testing"

	"github.com/pushd/pushd/store"
)

// FuzzKeyLayout checks the isolation the layout promises: a row key of one (app, bucket) or
// (app, channel, bucket) never falls inside another's scan bounds, and a by_bucket row key
// decodes back to its parts.
func FuzzKeyLayout(f *testing.F) {
	f.Add("app", "app2", "news", uint16(3), uint16(3), "ios", "obj")
	f.Add("a", "a\x00", "", uint16(0), uint16(65535), "", "\x00")
	f.Add("x\xff", "x", "c\x00\x01", uint16(255), uint16(256), "android", "o\xff")
	f.Fuzz(func(t *testing.T, app1, app2, channel string, b1, b2 uint16, dt, oid string) {
		row := store.AppendCursor(bucketPrefix(nil, app2, int(b2)), dt, oid)
		lo := bucketPrefix(nil, app1, int(b1))
		inside := bytes.Compare(row, lo) >= 0 && bytes.Compare(row, prefixEnd(lo)) < 0
		if inside != (app1 == app2 && b1 == b2) {
			t.Fatalf("row of (%q,%d) inside bounds of (%q,%d): %v", app2, b2, app1, b1, inside)
		}
		crow := store.AppendCursor(channelPrefix(nil, app2, channel, int(b2)), dt, oid)
		clo := channelPrefix(nil, app1, channel, int(b1))
		cin := bytes.Compare(crow, clo) >= 0 && bytes.Compare(crow, prefixEnd(clo)) < 0
		if cin != (app1 == app2 && b1 == b2) {
			t.Fatalf("channel row of (%q,%d) inside bounds of (%q,%d): %v", app2, b2, app1, b1, cin)
		}
		if row[0] != tByBucket || crow[0] != tByChannel || row[0] == reservedQueue {
			t.Fatalf("table bytes %q %q", row[0], crow[0])
		}
		gotApp, rest, err := store.DecodeKeyString(row[1:])
		if err != nil || gotApp != app2 {
			t.Fatalf("app = %q, %v", gotApp, err)
		}
		gotB, rest, err := store.DecodeKeyUint16(rest)
		if err != nil || gotB != b2 {
			t.Fatalf("bucket = %d, %v", gotB, err)
		}
		gotDT, gotOID, err := store.DecodeCursor(rest)
		if err != nil || gotDT != dt || gotOID != oid {
			t.Fatalf("cursor = %q %q, %v", gotDT, gotOID, err)
		}
	})
}
