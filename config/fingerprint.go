package config

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/failover-exporter/failover_exporter/lib/readfile"
)

// A reload restarts only the clusters whose fingerprint changed. Secrets
// and TLS material are configured by path, so the fingerprint covers the
// current contents of those files and variables, not only their names:
// otherwise a password or certificate rotated in its file would look
// unchanged and the running cluster would keep the old one until the
// process restarts.

// fingerprintKey keys the fingerprints: random per process, so a
// fingerprint says nothing about a secret outside this process and cannot
// be checked against guesses.
var fingerprintKey = func() []byte {
	key := make([]byte, 32)
	_, _ = rand.Read(key) // never fails on Linux; see crypto/rand
	return key
}()

// Fingerprint identifies a cluster's settings together with the current
// contents of its TLS files and its secrets: a system's settings type
// calls it from its own Fingerprint method. It reads those files and
// variables on every call.
func Fingerprint(settings any, tls TLS, secrets ...Secret) (string, error) {
	// The settings hold file paths and variable names, never secret values.
	b, err := json.Marshal(settings)
	if err != nil {
		return "", fmt.Errorf("fingerprint config: %w", err)
	}
	parts := append([][]byte{b}, tls.FileContents()...)
	for _, s := range secrets {
		parts = append(parts, s.CurrentValue())
	}
	return KeyedDigest(parts...), nil
}

// FileContents reads the CA, certificate and key files. A file that cannot
// be read contributes its error, so that fixing it changes the fingerprint.
func (t TLS) FileContents() [][]byte {
	var contents [][]byte
	for _, f := range []string{t.CAFile, t.CertFile, t.KeyFile} {
		if f == "" {
			contents = append(contents, nil)
			continue
		}
		b, err := readfile.Bounded("tls file", f, readfile.PEMLimit)
		if err != nil {
			b = []byte("unreadable: " + err.Error())
		}
		contents = append(contents, b)
	}
	return contents
}

// CurrentValue reads the secret, or its error when it cannot be read.
func (s Secret) CurrentValue() []byte {
	if !s.IsSet() {
		return nil
	}
	v, err := s.Value()
	if err != nil {
		return []byte("unreadable: " + err.Error())
	}
	return []byte("value: " + v)
}

// KeyedDigest is the process's keyed digest of parts, for a fingerprint of
// the material of several settings (a flow's, and its two clusters').
func KeyedDigest(parts ...[]byte) string {
	mac := hmac.New(sha256.New, fingerprintKey)
	for _, p := range parts {
		// Length-prefixed, so that ("ab","c") and ("a","bc") differ.
		var n [8]byte
		for i, l := 0, len(p); i < 8; i, l = i+1, l>>8 {
			n[i] = byte(l)
		}
		mac.Write(n[:])
		mac.Write(p)
	}
	return hex.EncodeToString(mac.Sum(nil))
}
