// Package certs makes a throwaway certificate authority and the server and
// client certificates signed by it, in process with crypto/x509, for tests
// that run real TLS servers (Kafka, Redis, the exporter's own web server).
//
// Keys are ECDSA P-256 and written as unencrypted PKCS#8 ("PRIVATE KEY"),
// the one PEM key format that Go, OpenSSL (Redis) and Java (Kafka's PEM key
// store, ssl.keystore.type=PEM) all read.
package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// validity is long enough for any test run and short enough that a leaked
// lab certificate is worthless soon.
const validity = 24 * time.Hour

// CA is a self-signed certificate authority.
type CA struct {
	Cert    *x509.Certificate
	CertPEM []byte
	key     crypto.Signer
}

// Pair is a certificate issued by a CA, with its private key.
type Pair struct {
	Cert    *x509.Certificate
	CertPEM []byte
	// KeyPEM is the private key, PKCS#8.
	KeyPEM []byte
	// CAPEM is the issuing CA's certificate, for chains.
	CAPEM []byte
}

// NewCA makes a CA whose subject is commonName.
func NewCA(commonName string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate CA key: %w", err)
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName, Organization: []string{"failover_exporter tests"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("create CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse CA certificate: %w", err)
	}
	return &CA{Cert: cert, CertPEM: pemBlock("CERTIFICATE", der), key: key}, nil
}

// Options say what a certificate is for.
type Options struct {
	CommonName string
	// DNSNames and IPs are the subject alternative names a client verifies.
	DNSNames []string
	IPs      []net.IP
	// Server and Client set the extended key usages. A node of a cluster
	// that dials its peers with its own certificate (Redis with
	// tls-cluster/tls-replication) needs both.
	Server, Client bool
}

// Issue signs a new certificate.
func (ca *CA) Issue(opts Options) (*Pair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate key for %s: %w", opts.CommonName, err)
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: opts.CommonName, Organization: []string{"failover_exporter tests"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyAgreement,
		DNSNames:     opts.DNSNames,
		IPAddresses:  opts.IPs,
	}
	if opts.Server {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	if opts.Client {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.key)
	if err != nil {
		return nil, fmt.Errorf("sign certificate for %s: %w", opts.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse certificate for %s: %w", opts.CommonName, err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode key for %s: %w", opts.CommonName, err)
	}
	return &Pair{
		Cert:    cert,
		CertPEM: pemBlock("CERTIFICATE", der),
		KeyPEM:  pemBlock("PRIVATE KEY", pkcs8),
		CAPEM:   ca.CertPEM,
	}, nil
}

// Files are the paths Write produced, all in one directory.
type Files struct {
	Dir string
	// CA is the CA certificate (ca.pem): a trust store.
	CA string
	// ServerCert, ServerKey: server.pem, server-key.pem.
	ServerCert, ServerKey string
	// ServerKeyStore (server-keystore.pem) is the server key followed by its
	// certificate chain, the layout of Kafka's ssl.keystore.type=PEM file.
	ServerKeyStore string
	// ClientCert, ClientKey: client.pem, client-key.pem.
	ClientCert, ClientKey string
	// OtherCA (other-ca.pem) is an unrelated CA that signed nothing here:
	// a trust store that must make verification fail.
	OtherCA string
}

// Loopback are the names a lab server on 127.0.0.1 is reached by.
var (
	LoopbackDNS = []string{"localhost"}
	LoopbackIPs = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
)

// WriteSet makes a CA, a server certificate for localhost/127.0.0.1 (usable
// as a client certificate too, for cluster peers), a client certificate and
// an unrelated second CA, and writes them as PEM files into dir, keys with
// mode 0600. The file names are fixed (see Files), so scripts can find them
// from the directory alone.
func WriteSet(dir string) (Files, error) {
	ca, err := NewCA("failover_exporter test CA")
	if err != nil {
		return Files{}, err
	}
	other, err := NewCA("unrelated test CA")
	if err != nil {
		return Files{}, err
	}
	server, err := ca.Issue(Options{CommonName: "localhost", DNSNames: LoopbackDNS, IPs: LoopbackIPs, Server: true, Client: true})
	if err != nil {
		return Files{}, err
	}
	client, err := ca.Issue(Options{CommonName: "failover_exporter", Client: true})
	if err != nil {
		return Files{}, err
	}
	f := Files{
		Dir:            dir,
		CA:             filepath.Join(dir, "ca.pem"),
		ServerCert:     filepath.Join(dir, "server.pem"),
		ServerKey:      filepath.Join(dir, "server-key.pem"),
		ServerKeyStore: filepath.Join(dir, "server-keystore.pem"),
		ClientCert:     filepath.Join(dir, "client.pem"),
		ClientKey:      filepath.Join(dir, "client-key.pem"),
		OtherCA:        filepath.Join(dir, "other-ca.pem"),
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Files{}, err
	}
	for _, w := range []struct {
		path string
		data []byte
		mode os.FileMode
	}{
		{f.CA, ca.CertPEM, 0o644},
		{f.OtherCA, other.CertPEM, 0o644},
		{f.ServerCert, server.CertPEM, 0o644},
		{f.ServerKey, server.KeyPEM, 0o600},
		{f.ServerKeyStore, concat(server.KeyPEM, server.CertPEM, ca.CertPEM), 0o600},
		{f.ClientCert, client.CertPEM, 0o644},
		{f.ClientKey, client.KeyPEM, 0o600},
	} {
		if err := os.WriteFile(w.path, w.data, w.mode); err != nil {
			return Files{}, fmt.Errorf("write %s: %w", w.path, err)
		}
	}
	return f, nil
}

func concat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func serialNumber() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("serial number: %w", err)
	}
	return n, nil
}
