package config

import (
	"context"
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/internal/certs"
)

// A module may not set tls.server_name, because an empty one verifies each
// host's own name: the client config leaves it empty, and a client that
// dials the address with it (rueidis's tls.Dialer; sarama sets the name
// from the broker's address the same way) refuses a certificate that is
// valid, from the right CA, for another host only.
func TestTLSEmptyServerNameVerifiesEachHost(t *testing.T) {
	ca, err := certs.NewCA("test CA")
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, ca.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	client, err := TLS{Enabled: true, CAFile: caFile}.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	if client.ServerName != "" || client.InsecureSkipVerify {
		t.Fatalf("client config: ServerName %q, InsecureSkipVerify %v; want the name left to each dial, verified", client.ServerName, client.InsecureSkipVerify)
	}
	dial := func(t *testing.T, opts certs.Options) error {
		pair, err := ca.Issue(opts)
		if err != nil {
			t.Fatal(err)
		}
		cert, err := tls.X509KeyPair(pair.CertPEM, pair.KeyPEM)
		if err != nil {
			t.Fatal(err)
		}
		l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		go func() {
			if c, err := l.Accept(); err == nil {
				_ = c.(*tls.Conn).Handshake()
				c.Close()
			}
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		d := tls.Dialer{NetDialer: &net.Dialer{}, Config: client}
		c, err := d.DialContext(ctx, "tcp", l.Addr().String())
		if err == nil {
			c.Close()
		}
		return err
	}
	if err := dial(t, certs.Options{CommonName: "127.0.0.1", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Server: true}); err != nil {
		t.Errorf("a certificate for the dialled address: %v", err)
	}
	if err := dial(t, certs.Options{CommonName: "kafka-1.prod.internal", DNSNames: []string{"kafka-1.prod.internal"}, Server: true}); err == nil ||
		!strings.Contains(err.Error(), "cannot validate certificate for 127.0.0.1") {
		t.Errorf("another host's certificate from the same CA: %v, want it refused for its name", err)
	}
}
