package sim

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"sync"
	"time"
)

// simHosts are the names the self-signed certificate is valid for besides loopback IPs, so a
// sender configured with the real host names (and a resolver override) also verifies it.
var simHosts = []string{
	"localhost",
	"api.push.apple.com", "api.sandbox.push.apple.com", "api.development.push.apple.com",
	"fcm.googleapis.com", "oauth2.googleapis.com",
}

// tlsServer is the HTTP/2-over-TLS listener shared by the simulators.
type tlsServer struct {
	ln      net.Listener
	srv     *http.Server
	certPEM []byte
	roots   *x509.CertPool
	done    chan struct{}
	err     error // Serve's result, valid after done is closed

	closeOnce sync.Once
}

type serverOptions struct {
	addr        string
	handler     http.Handler
	http1       bool // also serve HTTP/1.1 (FCM); APNs is HTTP/2 only
	maxStreams  int
	clientCerts bool // request (not require) a client certificate
	connContext func(ctx context.Context, c net.Conn) context.Context
}

func startServer(o serverOptions) (*tlsServer, error) {
	cert, certPEM, err := selfSignedCert()
	if err != nil {
		return nil, err
	}
	addr := o.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on %s: %w", addr, err)
	}
	tcfg := &tls.Config{
		Certificates: []tls.Certificate{cert},
		MinVersion:   tls.VersionTLS12,
	}
	if o.clientCerts {
		// Verification is the simulator's job (it maps each registered certificate to topics),
		// so the handshake only asks for one and never fails a token-auth client without one.
		tcfg.ClientAuth = tls.RequestClientCert
	}
	var protos http.Protocols
	protos.SetHTTP2(true)
	protos.SetHTTP1(o.http1)
	srv := &http.Server{
		Handler:   o.handler,
		TLSConfig: tcfg,
		Protocols: &protos,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			ctx = context.WithValue(ctx, netConnKey{}, c) // an outage in drop mode closes it
			if o.connContext != nil {
				ctx = o.connContext(ctx, c)
			}
			return ctx
		},
		ReadHeaderTimeout: 10 * time.Second,
		HTTP2: &http.HTTP2Config{
			MaxConcurrentStreams: o.maxStreams,
		},
		// Handshake errors from clients that hang up are normal for a test peer; not logged.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	roots := x509.NewCertPool()
	roots.AddCert(cert.Leaf)
	s := &tlsServer{ln: ln, srv: srv, certPEM: certPEM, roots: roots, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		err := srv.ServeTLS(ln, "", "")
		if !errors.Is(err, http.ErrServerClosed) {
			s.err = err
		}
	}()
	return s, nil
}

func (s *tlsServer) url() string { return "https://" + s.ln.Addr().String() }

// clientTLS trusts the simulator's certificate and offers h2 (and http/1.1 where served).
func (s *tlsServer) clientTLS() *tls.Config {
	return &tls.Config{RootCAs: s.roots, NextProtos: []string{"h2"}, MinVersion: tls.VersionTLS12}
}

func (s *tlsServer) close() error {
	s.closeOnce.Do(func() {
		// Close, not Shutdown: tests end with requests possibly in flight and must not wait.
		_ = s.srv.Close()
		<-s.done
	})
	return s.err
}

// selfSignedCert makes a fresh P-256 certificate for loopback and the gateway host names.
func selfSignedCert() (tls.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("cannot generate simulator TLS key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("cannot generate certificate serial: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "pushd gateway simulator", Organization: []string{"pushd"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true, // self-signed: the certificate is its own root
		DNSNames:              simHosts,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("cannot create simulator certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("cannot parse simulator certificate: %w", err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, certPEM, nil
}
