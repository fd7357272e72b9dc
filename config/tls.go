package config

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"

	"github.com/failover-exporter/failover_exporter/lib/readfile"
)

// ClientConfig builds the *tls.Config for a client connection, or nil when
// TLS is disabled.
func (t TLS) ClientConfig() (*tls.Config, error) {
	if !t.Enabled {
		return nil, nil
	}
	c := &tls.Config{
		ServerName: t.ServerName,
		// Skipping verification is an explicit, documented switch for labs.
		InsecureSkipVerify: t.InsecureSkipVerify, //nolint:gosec
		MinVersion:         tls.VersionTLS12,
	}
	if t.CAFile != "" {
		pem, err := readfile.Bounded("tls.ca_file", t.CAFile, readfile.PEMLimit)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, errors.New("tls.ca_file holds no PEM certificate")
		}
		c.RootCAs = pool
	}
	if t.CertFile != "" {
		// Bounded reads, not tls.LoadX509KeyPair: a cert_file of /dev/zero
		// would be read until memory ran out.
		certPEM, err := readfile.Bounded("tls.cert_file", t.CertFile, readfile.PEMLimit)
		if err != nil {
			return nil, err
		}
		keyPEM, err := readfile.Bounded("tls.key_file", t.KeyFile, readfile.PEMLimit)
		if err != nil {
			return nil, err
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("load tls.cert_file/tls.key_file: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}
