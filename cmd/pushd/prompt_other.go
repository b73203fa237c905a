//go:build !linux

package main

import (
	"errors"
	"io"
	"os"
)

func promptKey(*os.File, io.Writer) (string, error) {
	return "", errors.New("the original's master key is needed: set " + importEnvKey)
}
