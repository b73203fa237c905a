package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/pushd/pushd/internal/waitfor"
)

// TestServeGatewayClusterAdvertises: with --log kafka the gateway role advertises
// --gateway-advertise in the store's registry once it owns push.direct partitions, and the
// routers answer with it (not with the asked host and the local port, as one node does).
func TestServeGatewayClusterAdvertises(t *testing.T) {
	kc, err := kfake.NewCluster(kfake.NumBrokers(3)) // pushd creates its topics with 3 replicas
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	data := t.TempDir()
	addr, _, stop := startServe(t, data, "--dev", "--roles", "api,gateway", "--log", "kafka",
		"--kafka-brokers", kc.ListenAddrs()[0], "--gateway-addr", "127.0.0.1:0",
		"--gateway-advertise", "ws://gw-1.example.test:8090")
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	var keys appKeys
	b, err := os.ReadFile(filepath.Join(data, "dev-app.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &keys); err != nil {
		t.Fatal(err)
	}
	waitfor.True(t, 60*time.Second, "the router to answer with the advertised gateway", func() bool {
		resp, err := http.Get("http://" + addr + "/v1/route?appId=" + keys.AppID + "&installationId=abc&secure=1")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var r struct{ Server string }
		return resp.StatusCode == 200 && json.Unmarshal(body, &r) == nil && r.Server == "ws://gw-1.example.test:8090/"
	})
}
