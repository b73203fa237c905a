package push

import "testing"

func TestPushValidProfile(t *testing.T) {
	for p, want := range map[string]bool{
		"": true, "a": true, "prod_2": true, "Enterprise": true,
		"_default": false, "2x": false, "a-b": false, "a b": false, "é": false,
	} {
		if got := ValidProfile(p); got != want {
			t.Errorf("ValidProfile(%q) = %v, want %v", p, got, want)
		}
	}
}
