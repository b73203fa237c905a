package sim

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pushd/pushd/internal/waitfor"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestCLIRunsBothSimulators(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- RunCLI(ctx, []string{"-apns-addr", "127.0.0.1:0", "-fcm-addr", "127.0.0.1:0", "-dir", dir,
			"-key-id", testKeyID, "-team-id", testTeamID, "-project", testProject, "-topics", testTopic}, &out)
	}()
	waitfor.True(t, 10*time.Second, "pushsim to print its addresses", func() bool {
		return strings.Contains(out.String(), "stats:")
	})
	text := out.String()
	apnsURL := regexp.MustCompile(`apns: (\S+)`).FindStringSubmatch(text)[1]
	fcmURL := regexp.MustCompile(`fcm: (\S+)`).FindStringSubmatch(text)[1]

	ca, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca) {
		t.Fatal("ca.pem holds no certificates")
	}
	c := h2Client(t, &tls.Config{RootCAs: roots, NextProtos: []string{"h2"}})

	p8, err := os.ReadFile(filepath.Join(dir, "AuthKey_"+testKeyID+".p8"))
	if err != nil {
		t.Fatal(err)
	}
	key, err := ParseAPNsKey(p8)
	if err != nil {
		t.Fatal(err)
	}
	jwt, _ := NewAPNsToken(key, testKeyID, testTeamID, time.Now())
	if r := sendAPNs(t, c, apnsURL, jwt, apnsReq{}); r.status != 200 {
		t.Fatalf("APNs: %+v", r)
	}

	sa, err := os.ReadFile(filepath.Join(dir, "service-account.json"))
	if err != nil {
		t.Fatal(err)
	}
	f := &fcmFixture{sa: sa, c: c, base: fcmURL, tokURL: fcmURL + "/token"}
	f.access = f.fetchToken(t, time.Now())
	if r := f.send(t, testProject, msg(`"token":"`+testFCMToken+`"`)); r.status != 200 {
		t.Fatalf("FCM: %+v", r)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
