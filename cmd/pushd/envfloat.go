package main

import (
	"os"
	"strconv"
)

func envFloat(name string, def float64) float64 {
	if v, ok := os.LookupEnv(name); ok {
		f, err := strconv.ParseFloat(v, 64)
		if err == nil {
			return f
		}
	}
	return def
}
