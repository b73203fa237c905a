//go:build !linux || !cgo

package main

// execWithHugePages does nothing: without cgo Pebble allocates its memtables and cache in Go's
// heap, which glibc's tunable does not reach, and the tunable is glibc's, on Linux.
func execWithHugePages(string) {}
