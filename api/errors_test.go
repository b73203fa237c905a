package api

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestAPIErrorsDocListsEveryCode(t *testing.T) {
	b, err := os.ReadFile("../docs/errors.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for code, status := range codeStatus {
		row := fmt.Sprintf("| %d | %d", code, status)
		if !strings.Contains(doc, row) {
			t.Errorf("docs/errors.md lacks a row starting %q", row)
		}
	}
}
