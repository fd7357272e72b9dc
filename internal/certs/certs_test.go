package certs

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"strings"
	"testing"
)

func TestWriteSet(t *testing.T) {
	f, err := WriteSet(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	pool := func(path string) *x509.CertPool {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		p := x509.NewCertPool()
		if !p.AppendCertsFromPEM(b) {
			t.Fatalf("%s holds no certificate", path)
		}
		return p
	}
	server, err := tls.LoadX509KeyPair(f.ServerCert, f.ServerKey)
	if err != nil {
		t.Fatalf("server pair: %v", err)
	}
	client, err := tls.LoadX509KeyPair(f.ClientCert, f.ClientKey)
	if err != nil {
		t.Fatalf("client pair: %v", err)
	}
	serverCert, _ := x509.ParseCertificate(server.Certificate[0])
	clientCert, _ := x509.ParseCertificate(client.Certificate[0])

	for _, name := range []string{"localhost", "127.0.0.1", "::1"} {
		if _, err := serverCert.Verify(x509.VerifyOptions{Roots: pool(f.CA), DNSName: name}); err != nil {
			t.Errorf("server certificate for %s: %v", name, err)
		}
	}
	if _, err := serverCert.Verify(x509.VerifyOptions{Roots: pool(f.CA), DNSName: "other.example"}); err == nil {
		t.Error("server certificate verified for a name it does not hold")
	}
	if _, err := serverCert.Verify(x509.VerifyOptions{Roots: pool(f.OtherCA)}); err == nil {
		t.Error("server certificate verified against the unrelated CA")
	}
	if _, err := clientCert.Verify(x509.VerifyOptions{Roots: pool(f.CA), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client certificate: %v", err)
	}

	// Kafka's PEM key store: the PKCS#8 key, then the chain, leaf first.
	b, err := os.ReadFile(f.ServerKeyStore)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			break
		}
		types = append(types, block.Type)
	}
	if got := strings.Join(types, ","); got != "PRIVATE KEY,CERTIFICATE,CERTIFICATE" {
		t.Errorf("key store blocks %s", got)
	}
	if st, err := os.Stat(f.ServerKey); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("server key mode: %v %v", st.Mode(), err)
	}
}
