package fanout

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

// Task ids are stable: the job id, a slash, then the bucket range "lo-hi" or the point chunk
// "p<i>". A replanned job produces the same ids, which is how redelivered tasks are recognised.

func rangeTaskID(jobID string, lo, hi int) string { return fmt.Sprintf("%s/%d-%d", jobID, lo, hi) }

func pointTaskID(jobID string, chunk int) string { return fmt.Sprintf("%s/p%d", jobID, chunk) }

// taskSuffix is the part of a task id after its job id: what the record lists as finished.
func taskSuffix(t *push.Task) string {
	return strings.TrimPrefix(t.ID, t.Job.ID+"/")
}

// taskKey is a task's log key: its first bucket (point tasks: its chunk number).
func taskKey(n int) []byte { return strconv.AppendInt(nil, int64(n), 10) }

// Checkpoint cursors. A range task's cursor is the bucket being scanned (2 bytes, big-endian)
// followed by the store cursor of the last row done in it (empty: the bucket from its start).
// A point task's cursor is the index of the next id (4 bytes, big-endian).

func appendRangeCursor(dst []byte, bucket int, row []byte) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(bucket))
	return append(dst, row...)
}

func decodeRangeCursor(c []byte, lo, hi int) (bucket int, row []byte, err error) {
	if len(c) == 0 {
		return lo, nil, nil
	}
	if len(c) < 2 {
		return 0, nil, fmt.Errorf("cannot decode task cursor: %w", store.ErrBadKey)
	}
	b := int(binary.BigEndian.Uint16(c))
	if b < lo || b > hi { // hi: past the end
		return 0, nil, fmt.Errorf("cannot decode task cursor: bucket %d outside [%d,%d)", b, lo, hi)
	}
	return b, c[2:], nil
}

func appendPointCursor(dst []byte, next int) []byte {
	return binary.BigEndian.AppendUint32(dst, uint32(next))
}

func decodePointCursor(c []byte, n int) (int, error) {
	if len(c) == 0 {
		return 0, nil
	}
	if len(c) != 4 {
		return 0, fmt.Errorf("cannot decode task cursor: %w", store.ErrBadKey)
	}
	i := int(binary.BigEndian.Uint32(c))
	if i > n {
		return 0, fmt.Errorf("cannot decode task cursor: id %d past %d ids", i, n)
	}
	return i, nil
}
