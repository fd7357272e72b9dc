package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCheckRefreshIntervalNamesTheFlag(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                   "--refresh.interval 0s must be positive (at least 100ms)",
		-time.Second:        "--refresh.interval -1s must be positive (at least 100ms)",
		time.Millisecond:    "--refresh.interval 1ms is shorter than 100ms",
		1000000 * time.Hour: "--refresh.interval 1000000h0m0s is longer than 1h0m0s",
	} {
		if err := CheckRefreshInterval("--refresh.interval", d); err == nil || err.Error() != want {
			t.Errorf("CheckRefreshInterval(%s) = %v, want %q", d, err, want)
		}
	}
	if err := CheckRefreshInterval("--refresh.interval", 5*time.Second); err != nil {
		t.Errorf("5s refused: %v", err)
	}
}

// TestCheckEventCapacityIsBounded: the event log allocates its ring at
// start, so --config.check must refuse what the start would die on.
func TestCheckEventCapacityIsBounded(t *testing.T) {
	for _, c := range []struct {
		n    int
		want string // "" when accepted
	}{
		{-1, "--events.capacity -1 must be at least 1"},
		{0, "--events.capacity 0 must be at least 1"},
		{1, ""},
		{1000, ""},
		{MaxEventCapacity, ""},
		{MaxEventCapacity + 1, "--events.capacity 100001 is more than 100000, the most the event log keeps (each event is held in memory from the start)"},
		{200_000_000, "--events.capacity 200000000 is more than 100000, the most the event log keeps (each event is held in memory from the start)"},
	} {
		err := CheckEventCapacity("--events.capacity", c.n)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("CheckEventCapacity(%d) = %v, want it accepted", c.n, err)
		case c.want != "" && (err == nil || err.Error() != c.want):
			t.Errorf("CheckEventCapacity(%d) = %v, want %q", c.n, err, c.want)
		}
	}
}

func TestLoadRefusesAHugeFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "huge.yml")
	// Valid YAML throughout, so only the size can be the reason.
	body := "test:\n  - addrs: [127.0.0.1:9092]\n" + strings.Repeat("# padding padding padding padding\n", MaxConfigSize/30)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if want := "config file " + path + " is larger than 1024 KiB"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error = %v, want %q", err, want)
	}
	// Just under the limit is fine.
	if err := os.WriteFile(path, []byte(body[:MaxConfigSize]), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err != nil {
		t.Errorf("a file of exactly %d bytes: %v", MaxConfigSize, err)
	}
}
