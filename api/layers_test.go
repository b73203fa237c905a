package api_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The API tier validates, writes records and appends jobs; it must not depend on fan-out or
// sender code (DESIGN.md: cmd → api, fanout, sender, scheduler → query, queue, store → push).
// Payload rendering, which the API uses to refuse unsendable data, lives in push/render.
func TestAPILayersImportNoFanoutOrSender(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-test", "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"github.com/pushd/pushd/fanout", "github.com/pushd/pushd/sender", "github.com/pushd/pushd/scheduler"} {
			if dep == banned || strings.HasPrefix(dep, banned+"/") {
				t.Errorf("the api packages depend on %s", dep)
			}
		}
	}
}
