package receipt

import (
	"strings"
	"testing"
)

// The callback of a request: the URL carries the app's token and fits the vendor's limit, or
// no receipt is asked; the parameter reads back as the push it names.
func TestReceiptCallback(t *testing.T) {
	u, p := Callback("https://push.example.com/", "mi", "app1", "secret", 128, "0123456789abcdef01234567", "nid1")
	if want := "https://push.example.com/receipts/mi/app1/" + Token("secret", "app1"); u != want {
		t.Fatalf("url %q; want %q", u, want)
	}
	if pid, nid, ok := parseParam(p); !ok || pid != "0123456789abcdef01234567" || nid != "nid1" || len(p) > 64 {
		t.Fatalf("param %q reads %q %q %v", p, pid, nid, ok)
	}
	if u, p := Callback("https://"+strings.Repeat("h", 100)+".example.com", "mi", "app1", "s", 128, "x", "y"); u != "" || p != "" {
		t.Fatalf("a URL past the limit asked for a receipt: %q %q", u, p)
	}
	if u, _ := Callback("", "mi", "app1", "s", 128, "x", "y"); u != "" {
		t.Fatalf("no --receipt-url asked for a receipt: %q", u)
	}
	if Token("secret", "app1") == Token("secret", "app2") || Token("a", "app1") == Token("b", "app1") {
		t.Fatal("the token does not depend on the app and the secret")
	}
}
