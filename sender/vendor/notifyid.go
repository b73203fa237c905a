package vendor

import (
	"hash/fnv"
	"strconv"
)

// NotifyID is the number every vendor channel carries for a push's notification id nid (Mi
// notify_id, HMS notify_id, Honor notifyId, vivo notifyId, OPPO notify_id; Meizu's notifyKey
// is its base-36 text, NotifyKey): a device that shows a push it got on the own channel (whose
// frame carries nid) can compute it, find the vendor's notification of the same push and show
// it once; a push sent again with the same nid replaces its notification. FNV-1a of nid into
// 1..2147483647, the range all of them accept; 0 for an empty nid (no id sent).
func NotifyID(nid string) int64 {
	if nid == "" {
		return 0
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(nid))
	return int64(h.Sum32()%2147483647) + 1
}

// NotifyKey is NotifyID in base 36 (at most 6 characters): Meizu's notifyKey allows 8 of
// [0-9a-zA-Z_-]. "" for an empty nid.
func NotifyKey(nid string) string {
	if nid == "" {
		return ""
	}
	return strconv.FormatInt(NotifyID(nid), 36)
}
