package embedded

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Key layout. Every key starts with prefixQueue ('q', 0x71): the store never writes under it.
//
//	message:   'q' 'm' len(topic) topic partition(u32 BE) offset(u64 BE) → envelope
//	committed: 'q' 'c' len(topic) topic len(group) group partition(u32 BE) → next offset (u64 BE)
//	floor:     'q' 't' len(topic) topic partition(u32 BE) → trimmed offset (u64 BE)
//
// A partition's floor is written in the batch of the trim that deleted its messages below it:
// offsets below the floor were assigned once and are never assigned again.
//
// Big-endian fixed-width integers keep byte order equal to numeric order, so a partition's
// messages are one contiguous key range sorted by offset.
const (
	prefixQueue     = 'q'
	kindMessage     = 'm'
	kindCommitted   = 'c'
	kindFloor       = 't'
	envelopeVersion = 1
)

// appendName appends a length-prefixed name (topic or group; at most 255 bytes).
func appendName(dst []byte, name string) []byte {
	dst = append(dst, byte(len(name)))
	return append(dst, name...)
}

func checkName(what, name string) error {
	if name == "" || len(name) > 255 {
		return fmt.Errorf("invalid %s name %q: must be 1 to 255 bytes", what, name)
	}
	return nil
}

// partitionPrefix is 'q' 'm' topic partition: the prefix of every message key of a partition.
func partitionPrefix(dst []byte, topic string, partition int) []byte {
	dst = append(dst, prefixQueue, kindMessage)
	dst = appendName(dst, topic)
	return binary.BigEndian.AppendUint32(dst, uint32(partition))
}

func messageKey(dst []byte, topic string, partition int, offset int64) []byte {
	dst = partitionPrefix(dst, topic, partition)
	return binary.BigEndian.AppendUint64(dst, uint64(offset))
}

// partitionEnd is the exclusive upper bound of a partition's message keys.
func partitionEnd(dst []byte, topic string, partition int) []byte {
	return partitionPrefix(dst, topic, partition+1)
}

// offsetOfKey decodes the offset of a message key (its last 8 bytes).
func offsetOfKey(k []byte) int64 {
	return int64(binary.BigEndian.Uint64(k[len(k)-8:]))
}

// topicCommitPrefix is the prefix of every committed-offset key of a topic.
func topicCommitPrefix(dst []byte, topic string) []byte {
	dst = append(dst, prefixQueue, kindCommitted)
	return appendName(dst, topic)
}

func commitKey(dst []byte, topic, group string, partition int) []byte {
	dst = topicCommitPrefix(dst, topic)
	dst = appendName(dst, group)
	return binary.BigEndian.AppendUint32(dst, uint32(partition))
}

func floorKey(dst []byte, topic string, partition int) []byte {
	dst = append(dst, prefixQueue, kindFloor)
	dst = appendName(dst, topic)
	return binary.BigEndian.AppendUint32(dst, uint32(partition))
}

func offsetValue(off int64) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(off))
}

// prefixEnd is the smallest key greater than every key starting with p.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil // p is all 0xff: no upper bound
}

// decodeCommitKey splits the part of a commit key after topicCommitPrefix into group and
// partition.
func decodeCommitKey(rest []byte) (group string, partition int, err error) {
	if len(rest) < 1 || len(rest) != 1+int(rest[0])+4 {
		return "", 0, errors.New("malformed committed-offset key")
	}
	n := int(rest[0])
	return string(rest[1 : 1+n]), int(binary.BigEndian.Uint32(rest[1+n:])), nil
}

// appendEnvelope encodes a record's key and value: version byte, uvarint key length, key, value.
func appendEnvelope(dst, key, value []byte) []byte {
	dst = append(dst, envelopeVersion)
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	dst = append(dst, key...)
	return append(dst, value...)
}

// envelopeLen is the length of appendEnvelope's bytes for key and value.
func envelopeLen(key, value []byte) int {
	var n [binary.MaxVarintLen64]byte
	return 1 + len(binary.AppendUvarint(n[:0], uint64(len(key)))) + len(key) + len(value)
}

// decodeEnvelope returns key and value aliasing b.
func decodeEnvelope(b []byte) (key, value []byte, err error) {
	if len(b) < 1 || b[0] != envelopeVersion {
		return nil, nil, errors.New("unknown message envelope version")
	}
	n, sz := binary.Uvarint(b[1:])
	if sz <= 0 || n > uint64(len(b)-1-sz) {
		return nil, nil, errors.New("malformed message envelope")
	}
	b = b[1+sz:]
	return b[:n], b[n:], nil
}
