package main

import "net"

// simReceiptURL is --receipt-url's default under --dev --sim: this node's API on loopback, so
// that `make run` shows the simulators' receipts; "" when --addr names no fixed port (":0").
func simReceiptURL(addr string) string {
	_, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" || port == "0" {
		return ""
	}
	return "http://127.0.0.1:" + port
}
