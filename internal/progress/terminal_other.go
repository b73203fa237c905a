//go:build !linux

package progress

import "os"

// IsTerminal reports false off Linux: progress is then printed as plain lines.
func IsTerminal(*os.File) bool { return false }
