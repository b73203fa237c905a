package push

import "unicode/utf8"

// ChannelNameChars says whether every character of s may appear in a channel name: ASCII
// letters and digits, `_`, `-`, `=` and CJK unified ideographs (the spec's charset). It says
// nothing about length: the empty name is the broadcast channel of a push, and an
// installation's channel names must be non-empty and short (api checks that).
func ChannelNameChars(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9', r == '_', r == '-', r == '=':
		case isCJKUnified(r):
		default:
			return false
		}
	}
	return true
}

// isCJKUnified says whether r is in a CJK Unified Ideographs block (the basic block,
// extension A, and extensions B–I in planes 2 and 3). Compatibility ideographs are not.
func isCJKUnified(r rune) bool {
	switch {
	case 0x4E00 <= r && r <= 0x9FFF, 0x3400 <= r && r <= 0x4DBF:
		return true
	case 0x20000 <= r && r <= 0x2EE5F: // extensions B–F, I (2F800–2FA1F compatibility lies above)
		return true
	case 0x30000 <= r && r <= 0x323AF: // extensions G, H
		return true
	}
	return false
}
