package config

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
)

// The collector manager compares clusters by their JSON encoding to decide
// which to restart on a reload. Secrets and TLS files are configured by
// path, so without the digests below a password or certificate rotated in
// its file would look unchanged and the running cluster would keep the old
// one until the process restarts.

// digestKey keys the digests: random per process, so a digest says nothing
// about a secret outside this process and cannot be checked against guesses.
var digestKey = func() []byte {
	key := make([]byte, 32)
	_, _ = rand.Read(key) // never fails on Linux; see crypto/rand
	return key
}()

func digest(parts ...[]byte) string {
	mac := hmac.New(sha256.New, digestKey)
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

// MarshalJSON writes where the secret comes from and a keyed digest of its
// current value, never the value itself.
func (s Secret) MarshalJSON() ([]byte, error) {
	out := struct {
		File   string `json:"file,omitempty"`
		Env    string `json:"env,omitempty"`
		Digest string `json:"digest,omitempty"`
	}{File: s.File, Env: s.Env}
	if s.IsSet() {
		if v, err := s.Value(); err == nil {
			out.Digest = digest([]byte(v))
		}
	}
	return json.Marshal(out)
}

// MarshalJSON writes the TLS settings and a keyed digest of the files'
// current contents.
func (t TLS) MarshalJSON() ([]byte, error) {
	type plain TLS
	out := struct {
		plain
		Digest string `json:"digest,omitempty"`
	}{plain: plain(t)}
	var contents [][]byte
	for _, f := range []string{t.CAFile, t.CertFile, t.KeyFile} {
		if f == "" {
			contents = append(contents, nil)
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			b = []byte("unreadable: " + err.Error())
		}
		contents = append(contents, b)
	}
	out.Digest = digest(contents...)
	return json.Marshal(out)
}
