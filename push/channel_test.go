package push

import "testing"

func TestChannelNameChars(t *testing.T) {
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"", true}, // the broadcast channel of a push
		{"news_2024-a=b", true},
		{"体育", true},         // U+4F53 U+80B2, basic block
		{"\u3400", true},     // extension A
		{"\U00020000", true}, // extension B
		{"\U00030000", true}, // extension G
		{"a b", false},
		{"a.b", false},
		{"$all", false},
		{"news😀", false},
		{"にゅーす", false},       // hiragana
		{"\uF900", false},     // compatibility ideograph, Han script
		{"\u2E80", false},     // CJK radical, Han script
		{"\u3005", false},     // iteration mark, Han script
		{"\U0002F800", false}, // compatibility supplement
		{"\xff", false},       // not UTF-8
	} {
		if got := ChannelNameChars(c.name); got != c.ok {
			t.Errorf("ChannelNameChars(%q) = %v, want %v", c.name, got, c.ok)
		}
	}
}
