package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadNamesTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yml")
	if err := os.WriteFile(path, []byte("test:\n  - nope: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("error = %v, want the path and line 2", err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.yml")); err == nil {
		t.Error("missing file: want an error")
	}
}

func TestSecretFromFileAndEnv(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(path, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if v, err := (Secret{File: path}).Value(); err != nil || v != "s3cret" {
		t.Errorf("file secret = %q, %v", v, err)
	}
	t.Setenv("FAILOVER_TEST_PW", "from-env")
	if v, err := (Secret{Env: "FAILOVER_TEST_PW"}).Value(); err != nil || v != "from-env" {
		t.Errorf("env secret = %q, %v", v, err)
	}
	if s := (Secret{Env: "FAILOVER_TEST_PW"}).String(); strings.Contains(s, "from-env") {
		t.Errorf("String() leaks the secret: %q", s)
	}
}
