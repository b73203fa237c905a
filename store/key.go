package store

import (
	"bytes"
	"encoding/binary"
	"errors"
)

// Key tuple encoding shared by the implementations: the embedded store builds its Pebble keys
// from it, and both implementations encode scan cursors with it, so a cursor means the same
// thing whichever store produced it.
//
// Every component is order-preserving and self-delimiting, so a tuple's encoding sorts like the
// tuple and no encoded key is a prefix of another key with a different first component:
//   - strings: bytes with 0x00 escaped as 0x00 0xFF, terminated by 0x00 0x01;
//   - uint16 / uint64: fixed-width big-endian;
//   - int64: big-endian with the sign bit flipped (negative values sort first).

// ErrBadKey reports an encoded key or cursor that does not decode.
var ErrBadKey = errors.New("malformed key")

const (
	escByte  = 0x00
	escZero  = 0xFF // 0x00 0xFF: a literal zero byte
	escTerm  = 0x01 // 0x00 0x01: end of string
	signFlip = uint64(1) << 63
)

// AppendKeyString appends s in the escaped, terminated form.
func AppendKeyString(dst []byte, s string) []byte {
	for {
		i := indexZero(s)
		if i < 0 {
			dst = append(dst, s...)
			break
		}
		dst = append(dst, s[:i]...)
		dst = append(dst, escByte, escZero)
		s = s[i+1:]
	}
	return append(dst, escByte, escTerm)
}

func indexZero(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return i
		}
	}
	return -1
}

// DecodeKeyString decodes one string from the front of src and returns it and the rest.
func DecodeKeyString(src []byte) (string, []byte, error) {
	var out []byte
	for {
		i := bytes.IndexByte(src, escByte)
		if i < 0 || i+1 >= len(src) {
			return "", nil, ErrBadKey
		}
		switch src[i+1] {
		case escTerm:
			if out == nil {
				return string(src[:i]), src[i+2:], nil
			}
			out = append(out, src[:i]...)
			return string(out), src[i+2:], nil
		case escZero:
			out = append(out, src[:i]...)
			out = append(out, 0)
			src = src[i+2:]
		default:
			return "", nil, ErrBadKey
		}
	}
}

// SkipKeyString returns src after the string at its front, without decoding it.
func SkipKeyString(src []byte) ([]byte, error) {
	for {
		i := bytes.IndexByte(src, escByte)
		if i < 0 || i+1 >= len(src) {
			return nil, ErrBadKey
		}
		switch src[i+1] {
		case escTerm:
			return src[i+2:], nil
		case escZero:
			src = src[i+2:]
		default:
			return nil, ErrBadKey
		}
	}
}

// AppendKeyUint16 appends v big-endian.
func AppendKeyUint16(dst []byte, v uint16) []byte { return binary.BigEndian.AppendUint16(dst, v) }

// DecodeKeyUint16 decodes a big-endian uint16 from the front of src.
func DecodeKeyUint16(src []byte) (uint16, []byte, error) {
	if len(src) < 2 {
		return 0, nil, ErrBadKey
	}
	return binary.BigEndian.Uint16(src), src[2:], nil
}

// AppendKeyUint64 appends v big-endian.
func AppendKeyUint64(dst []byte, v uint64) []byte { return binary.BigEndian.AppendUint64(dst, v) }

// DecodeKeyUint64 decodes a big-endian uint64 from the front of src.
func DecodeKeyUint64(src []byte) (uint64, []byte, error) {
	if len(src) < 8 {
		return 0, nil, ErrBadKey
	}
	return binary.BigEndian.Uint64(src), src[8:], nil
}

// AppendKeyInt64 appends v so that signed order is byte order.
func AppendKeyInt64(dst []byte, v int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(v)^signFlip)
}

// DecodeKeyInt64 decodes an int64 written by AppendKeyInt64.
func DecodeKeyInt64(src []byte) (int64, []byte, error) {
	if len(src) < 8 {
		return 0, nil, ErrBadKey
	}
	return int64(binary.BigEndian.Uint64(src) ^ signFlip), src[8:], nil
}

// AppendCursor encodes a scan position: the clustering key (deviceType, objectId) of a row
// inside its bucket.
func AppendCursor(dst []byte, deviceType, objectID string) []byte {
	return AppendKeyString(AppendKeyString(dst, deviceType), objectID)
}

// DecodeCursor decodes a cursor from AppendCursor.
func DecodeCursor(c []byte) (deviceType, objectID string, err error) {
	deviceType, rest, err := DecodeKeyString(c)
	if err != nil {
		return "", "", err
	}
	objectID, rest, err = DecodeKeyString(rest)
	if err != nil || len(rest) != 0 {
		return "", "", ErrBadKey
	}
	return deviceType, objectID, nil
}
