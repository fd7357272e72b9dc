package kafka

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"io"
	"net"
	"reflect"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/go-kit/log"

	"github.com/failover-exporter/failover_exporter/internal/certs"
	kafkasettings "github.com/failover-exporter/failover_exporter/systems/kafka/settings"
)

func TestProbeTargetsKeepDownBrokersLastAddress(t *testing.T) {
	md := &sarama.MetadataResponse{}
	md.AddBroker("127.0.0.1:9091", 1)
	md.AddBroker("127.0.0.1:9092", 2)
	prev := &Snapshot{Brokers: []Broker{
		{ID: 1, Address: "127.0.0.1:9091"},
		{ID: 2, Address: "127.0.0.1:9092"},
		{ID: 3, Address: "127.0.0.1:9093"}, // unregistered since: still probed
		{ID: 4},                            // never had an address: nothing to dial
	}}
	if got, want := probeTargets(md, prev), []string{"127.0.0.1:9091", "127.0.0.1:9092", "127.0.0.1:9093"}; !reflect.DeepEqual(got, want) {
		t.Errorf("probeTargets = %v, want %v", got, want)
	}
	if got, want := probeTargets(md, nil), []string{"127.0.0.1:9091", "127.0.0.1:9092"}; !reflect.DeepEqual(got, want) {
		t.Errorf("probeTargets without a previous snapshot = %v, want %v", got, want)
	}
}

// answerAPIVersions serves ln as a broker answers ApiVersions: the
// request's correlation id back, error code 0, no APIs.
func answerAPIVersions(ln net.Listener) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer conn.Close()
			var size [4]byte
			if _, err := io.ReadFull(conn, size[:]); err != nil {
				return
			}
			req := make([]byte, binary.BigEndian.Uint32(size[:]))
			if _, err := io.ReadFull(conn, req); err != nil || len(req) < 8 {
				return
			}
			resp := binary.BigEndian.AppendUint32(nil, 10)
			resp = append(resp, req[4:8]...)                  // correlation id
			resp = append(resp, 0, 0, 0xff, 0xff, 0xff, 0xff) // error 0, no APIs
			_, _ = conn.Write(resp)
		}()
	}
}

// A closed port is not reached; a port that accepts connections and never
// answers (a proxy holding them, a load balancer before a dead broker) is
// not either; one that answers ApiVersions is; and the broker that
// answered the Metadata request counts as reached without a dial.
func TestProbeAddrsDialsEachAddress(t *testing.T) {
	open, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	go answerAPIVersions(open)
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close()
	connected := "127.0.0.1:1" // nothing listens there: a dial would fail

	s := &source{cfg: kafkasettings.Cluster{DialTimeout: time.Second}, logger: log.NewNopLogger()}
	got := s.probeAddrs(context.Background(), []string{open.Addr().String(), closedAddr, silent.Addr().String(), connected, ""}, connected)
	want := map[string]bool{open.Addr().String(): true, connected: true}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("probeAddrs = %v, want %v", got, want)
	}
}

// A broker behind TLS is reached over TLS with the client's settings, its
// certificate checked against the host dialled; a certificate of another
// CA is not reached.
func TestProbeAddrsOverTLS(t *testing.T) {
	ca, err := certs.NewCA("reach test CA")
	if err != nil {
		t.Fatal(err)
	}
	server, err := ca.Issue(certs.Options{CommonName: "broker", IPs: []net.IP{net.ParseIP("127.0.0.1")}, Server: true})
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(server.CertPEM, server.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go answerAPIVersions(ln)
	addr := ln.Addr().String()

	trusted := x509.NewCertPool()
	trusted.AddCert(ca.Cert)
	other, err := certs.NewCA("another CA")
	if err != nil {
		t.Fatal(err)
	}
	untrusted := x509.NewCertPool()
	untrusted.AddCert(other.Cert)
	for _, c := range []struct {
		name  string
		roots *x509.CertPool
		want  bool
	}{{"the broker's CA", trusted, true}, {"another CA", untrusted, false}} {
		conf := sarama.NewConfig()
		conf.Net.TLS.Enable = true
		conf.Net.TLS.Config = &tls.Config{RootCAs: c.roots, MinVersion: tls.VersionTLS12}
		s := &source{cfg: kafkasettings.Cluster{DialTimeout: time.Second}, conf: conf, logger: log.NewNopLogger()}
		if got := s.probeAddrs(context.Background(), []string{addr}, "")[addr]; got != c.want {
			t.Errorf("TLS broker with %s trusted: reached %v, want %v", c.name, got, c.want)
		}
	}
}
