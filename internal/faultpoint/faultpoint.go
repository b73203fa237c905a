// Package faultpoint lets process-level tests kill pushd at a named point between two durable
// writes, to prove that a crash there loses nothing (issue 12). It owns nothing else.
//
// A package declares its points once, as package variables:
//
//	var fpAfterRecord = faultpoint.Define("accept/after-record")
//
// and calls fpAfterRecord.Hit() between the two writes. A process started with
// PUSHD_FAULTPOINT=accept/after-record sends itself SIGKILL the first time it reaches that
// point (PUSHD_FAULTPOINT=name@N: the N-th time), after printing "faultpoint NAME reached" on
// standard error so that the test knows the kill landed there. With the variable unset, Hit is
// one comparison of an immutable string: free on every path.
//
// The armed point is read from the environment once, at start; Check (called by cmd/pushd
// after every package is initialised) refuses a name no package defined, so a misspelt point
// in a test fails at start instead of never firing. Safe for concurrent use.
package faultpoint

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// Env is the environment variable that arms a point.
const Env = "PUSHD_FAULTPOINT"

var (
	armedName, armedAt = parse(os.Getenv(Env))

	mu      sync.Mutex
	defined = map[string]*Point{}
)

// Point is one named place between two writes.
type Point struct {
	name  string
	armed bool
	hits  atomic.Int64
}

// Define declares a point; call it from a package variable's initialiser. Defining one name
// twice is a programmer error.
func Define(name string) *Point {
	mu.Lock()
	defer mu.Unlock()
	if _, ok := defined[name]; ok {
		panic("BUG: fault point " + name + " is defined twice")
	}
	p := &Point{name: name, armed: name == armedName}
	defined[name] = p
	return p
}

// Hit kills the process if this point is armed and reached for the armed time.
func (p *Point) Hit() {
	if !p.armed {
		return
	}
	if p.hits.Add(1) != armedAt {
		return
	}
	fmt.Fprintf(os.Stderr, "faultpoint %s reached: SIGKILL\n", p.name)
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal is on its way: nothing after the point may run
}

// Name is the point's name.
func (p *Point) Name() string { return p.name }

// Armed is the name of the armed point, "" when none.
func Armed() string { return armedName }

// Check reports an armed name that no package defined, or a malformed count.
func Check() error {
	if armedName == "" {
		return nil
	}
	if armedAt <= 0 {
		return fmt.Errorf("%s=%s: the count after @ must be a whole number from 1", Env, os.Getenv(Env))
	}
	mu.Lock()
	defer mu.Unlock()
	if _, ok := defined[armedName]; ok {
		return nil
	}
	return fmt.Errorf("%s names %q, which is no fault point (known: %s)", Env, armedName, strings.Join(namesLocked(), ", "))
}

// Names lists every defined point, sorted.
func Names() []string {
	mu.Lock()
	defer mu.Unlock()
	return namesLocked()
}

func namesLocked() []string {
	names := make([]string, 0, len(defined))
	for n := range defined {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// parse splits "name" or "name@N"; a bad N yields 0, which Check refuses.
func parse(v string) (string, int64) {
	name, at, ok := strings.Cut(v, "@")
	if !ok {
		return name, 1
	}
	n, err := strconv.ParseInt(at, 10, 64)
	if err != nil {
		return name, 0
	}
	return name, n
}
