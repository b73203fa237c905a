package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// promptKey asks for the original's master key on a terminal, without echo.
func promptKey(in *os.File, out io.Writer) (string, error) {
	fd := int(in.Fd())
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return "", errors.New("the original's master key is needed: set " + importEnvKey + " (stdin is not a terminal to ask on)")
	}
	noEcho := *old
	noEcho.Lflag &^= unix.ECHO
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &noEcho); err != nil {
		return "", fmt.Errorf("cannot turn off echo: %w", err)
	}
	defer func() { _ = unix.IoctlSetTermios(fd, unix.TCSETS, old) }()
	fmt.Fprint(out, "master key of the app at the original service: ")
	line, err := bufio.NewReader(in).ReadString('\n')
	fmt.Fprintln(out)
	if err != nil && line == "" {
		return "", fmt.Errorf("cannot read the master key: %w", err)
	}
	k := strings.TrimSpace(line)
	if k == "" {
		return "", errors.New("no master key given")
	}
	return k, nil
}
