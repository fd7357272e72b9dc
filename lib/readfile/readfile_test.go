package readfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBounded(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(small, []byte("hunter2"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(big, make([]byte, 65), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := Bounded("password file", small, 64); err != nil || string(b) != "hunter2" {
		t.Fatalf("small file: %q, %v", b, err)
	}
	if b, err := Bounded("exact", big, 65); err != nil || len(b) != 65 {
		t.Fatalf("a file of exactly the limit must be read: %d bytes, %v", len(b), err)
	}
	for _, tc := range []struct{ path, want string }{
		{big, "larger than 64 bytes"},
		{"/dev/zero", "not a regular file but a device"},
		{dir, "not a regular file but a directory"},
		{filepath.Join(dir, "missing"), "no such file"},
	} {
		_, err := Bounded("ca_file", tc.path, 64)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "ca_file: ") {
			t.Errorf("%s: got %v, want an error naming ca_file that says %q", tc.path, err, tc.want)
		}
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{1 << 20: "1 MiB", 64 << 10: "64 KiB", 100: "100 bytes", 1<<20 + 1: "1048577 bytes"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}
