package pebble

import (
	"time"

	"github.com/pushd/pushd/store"
)

// Key layout. Each table of CLUSTER.md is one leading byte; the rest is the table's key tuple in
// the store's order-preserving, prefix-free encoding (store/key.go: escaped strings, big-endian
// numbers). The app id follows the table byte wherever CLUSTER.md's partition key starts with
// it, so one app's rows (and one bucket's, one channel's) are contiguous, and no prefix scan can
// reach another app. Byte 'q' is never used: it belongs to queue/embedded.
//
//	'a' app                                     → App JSON                       (apps)
//	'i' app objectId                            → bucket, route, createdAt, doc  (installations)
//	'b' app bucket deviceType objectId          → route + doc                    (installations_by_bucket)
//	'c' app channel bucket deviceType objectId  → route + doc                    (installations_by_channel)
//	'd' app kind deviceId                       → objectId                       (installations_by_device)
//	'u' app updatedHour objectId                → ∅                              (inactivity sweep; Cassandra uses TTL)
//	'n' app objectId                            → Notification JSON              (notifications_by_id + doc)
//	'o' app ^createdAt objectId                 → ∅                              (notifications, newest first)
//	'm' app notificationId objectId             → ∅                              (notifications_by_nid)
//	'j' app pendingSince objectId               → ∅                              (pending_jobs)
//	's' app id                                  → Scheduled JSON                 (scheduled_by_id)
//	'w' dueAt app id                            → Scheduled JSON                 (scheduled_pushes, by due time)
//	'x' name                                    → last id, uint64                (id counters)
//	'r' app reqId                               → createdAt, expiresAt, objectId (req_ids)
//	'v' app day                                 → total, int64                   (daily_volume)
//	'p' jobId taskId                            → TaskProgress JSON              (task_progress)
//	'g' app objectId                            → pushId, badge                  (installation_badges)
//	'k' app deviceId                            → dead since, unix ms            (dead_tokens)
//	'f' app installationId msgId                → state, seq, keep, message JSON (offline_messages)
//	'e' app objectId                            → sent, expired, arrivals        (notification_counts, own channel)
//	'l' name                                    → owner, epoch, expires          (leases)
//	'h' app id                                  → epoch, uint64                  (scheduled_by_id.fired_epoch)
//	'y' node                                    → url, partitions, expires       (gateways)
//	'C' app                                     → minute, count                  (call_counts; cluster.go)
//	'B' app                                     → until, unix ns                 (app_blocks)
//	'M' group member                            → expires, unix ns               (members)
//	'Q' app budget                              → count, day                     (vendor_quotas; quota.go)
//	'D' until app vendor pushId target          → Deferred JSON                  (deferred)
//	'K' app deviceId                            → day, push ids                  (marketing_counts; marketing.go)
//
// Times in keys are int64-encoded: updatedHour in unix milliseconds, updatedAt truncated to its
// hour (updatedSlot: a refresh within the hour leaves the row alone; rows written before that
// carry the exact updatedAt, which the sweep handles the same way), the others in unix
// nanoseconds; ^createdAt sorts newest first.
const (
	tApps        = 'a'
	tInst        = 'i'
	tByBucket    = 'b'
	tByChannel   = 'c'
	tByDevice    = 'd'
	tUpdated     = 'u'
	tNotif       = 'n'
	tNotifByTime = 'o'
	tNotifByNID  = 'm'
	tPendingJob  = 'j'
	tSched       = 's'
	tSchedDue    = 'w'
	tCounter     = 'x'
	tReqID       = 'r'
	tVolume      = 'v'
	tProgress    = 'p'
	tBadge       = 'g'
	tDead        = 'k'
	tOffline     = 'f'
	tDirectCount = 'e'
	tLease       = 'l'
	tSchedClaim  = 'h'
	tGateway     = 'y'
	tPresence    = 'z' // own-channel presence of a device: app, iid, kind (presence.go)

	reservedQueue = 'q' // queue/embedded; never written here
)

// The key encodings of store/key.go, as functions rather than variables holding them: a call
// through a variable makes every buffer passed to it escape to the heap.
func appendStr(dst []byte, s string) []byte  { return store.AppendKeyString(dst, s) }
func appendInt64(dst []byte, v int64) []byte { return store.AppendKeyInt64(dst, v) }
func appendUint16(dst []byte, v uint16) []byte {
	return store.AppendKeyUint16(dst, v)
}

func appKey(dst []byte, app string) []byte { return appendStr(append(dst, tApps), app) }

func instKey(dst []byte, app, oid string) []byte {
	return appendStr(appendStr(append(dst, tInst), app), oid)
}

// bucketPrefix is the key prefix of one by_bucket partition (app, bucket).
func bucketPrefix(dst []byte, app string, bucket int) []byte {
	return appendUint16(appendStr(append(dst, tByBucket), app), uint16(bucket))
}

// channelPrefix is the key prefix of one by_channel partition (app, channel, bucket).
func channelPrefix(dst []byte, app, channel string, bucket int) []byte {
	return appendUint16(appendStr(appendStr(append(dst, tByChannel), app), channel), uint16(bucket))
}

// sourcePrefix is the key prefix of one bucket of a push's source: by_bucket when channel is
// "", else by_channel of channel.
func sourcePrefix(dst []byte, app, channel string, bucket int) []byte {
	if channel == "" {
		return bucketPrefix(dst, app, bucket)
	}
	return channelPrefix(dst, app, channel, bucket)
}

func deviceKey(dst []byte, app, kind, id string) []byte {
	return appendStr(appendStr(appendStr(append(dst, tByDevice), app), kind), id)
}

func updatedPrefix(dst []byte, app string) []byte { return appendStr(append(dst, tUpdated), app) }

// updatedKey is the inactivity-index row of an installation last updated at updatedMs.
func updatedKey(dst []byte, app string, updatedMs int64, oid string) []byte {
	return appendStr(appendInt64(updatedPrefix(dst, app), updatedSlot(updatedMs)), oid)
}

// updatedSlotMs is the granularity of the inactivity index: an hour, the sweeper's interval.
const updatedSlotMs = int64(time.Hour / time.Millisecond)

// updatedSlot is the start of the hour of updatedMs, the time the inactivity index keys by.
func updatedSlot(updatedMs int64) int64 {
	return updatedMs - ((updatedMs%updatedSlotMs)+updatedSlotMs)%updatedSlotMs
}

func notifKey(dst []byte, app, oid string) []byte {
	return appendStr(appendStr(append(dst, tNotif), app), oid)
}

func notifTimePrefix(dst []byte, app string) []byte { return appendStr(append(dst, tNotifByTime), app) }

func notifTimeKey(dst []byte, app string, createdNs int64, oid string) []byte {
	return appendStr(appendInt64(notifTimePrefix(dst, app), ^createdNs), oid)
}

func notifNIDPrefix(dst []byte, app, nid string) []byte {
	return appendStr(appendStr(append(dst, tNotifByNID), app), nid)
}

func pendingPrefix(dst []byte, app string) []byte { return appendStr(append(dst, tPendingJob), app) }

// pendingKey is the pending_jobs row of a record whose job is pending since sinceNs.
func pendingKey(dst []byte, app string, sinceNs int64, oid string) []byte {
	return appendStr(appendInt64(pendingPrefix(dst, app), sinceNs), oid)
}

func schedPrefix(dst []byte, app string) []byte { return appendStr(append(dst, tSched), app) }

func schedKey(dst []byte, app string, id int64) []byte { return appendInt64(schedPrefix(dst, app), id) }

func schedDueKey(dst []byte, dueNs int64, app string, id int64) []byte {
	return appendInt64(appendStr(appendInt64(append(dst, tSchedDue), dueNs), app), id)
}

func schedClaimKey(dst []byte, app string, id int64) []byte {
	return appendInt64(appendStr(append(dst, tSchedClaim), app), id)
}

func leaseKey(dst []byte, name string) []byte { return appendStr(append(dst, tLease), name) }

func gatewayKey(dst []byte, node string) []byte { return appendStr(append(dst, tGateway), node) }

func counterKey(dst []byte, name string) []byte { return appendStr(append(dst, tCounter), name) }

func reqIDKey(dst []byte, app, reqID string) []byte {
	return appendStr(appendStr(append(dst, tReqID), app), reqID)
}

func volumeKey(dst []byte, app, day string) []byte {
	return appendStr(appendStr(append(dst, tVolume), app), day)
}

func progressKey(dst []byte, job, task string) []byte {
	return appendStr(appendStr(append(dst, tProgress), job), task)
}

// keyBuf is the size of the stack buffers keys are built in on the hot paths: an app id, an
// objectId and a notification id with their escapes fit; a longer key grows onto the heap.
const keyBuf = 128

// prefixEnd is the smallest key greater than every key starting with prefix: the exclusive
// upper bound of a prefix scan. Every prefix here starts with a table byte below 0xFF.
func prefixEnd(prefix []byte) []byte {
	end := append([]byte(nil), prefix...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xFF {
			end[i]++
			return end[:i+1]
		}
	}
	panic("BUG: prefixEnd of an all-0xFF prefix")
}
