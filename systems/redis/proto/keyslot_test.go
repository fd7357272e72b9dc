package redisproto

import "testing"

// The slots are what redis-server 7.0.15 answers to CLUSTER KEYSLOT for each
// key (redis-cli CLUSTER KEYSLOT KEY on a cluster-enabled node); the
// integration test asks a real node the same for several hundred more keys.
func TestKeySlot(t *testing.T) {
	tests := map[string]int{
		"foo":                  12182,
		"bar":                  5061,
		"123456789":            12739, // CRC16/XMODEM check value 0x31C3
		"":                     0,
		"{user1000}.following": 3443,
		"{user1000}.followers": 3443,
		"user1000":             3443,
		"foo{}{bar}":           8363,  // whole key: the first tag is empty
		"foo{{bar}}zap":        4015,  // tag is "{bar"
		"foo{bar}{zap}":        5061,  // only the first tag counts
		"{bar":                 4015,  // no closing brace: whole key
		"{}":                   15257, // empty tag: whole key
		"{{bar}}":              4015,  // tag is "{bar"
		"bar}":                 6624,
		"}{":                   12793,
		"a{b}c":                3300,
		"{":                    4092,
		"}":                    12090,
		"ключ":                 10303,
		"{ключ}x":              10303,
		"日本語{タグ}":              9716,
	}
	for key, want := range tests {
		if got := KeySlot(key); got != want {
			t.Errorf("KeySlot(%q) = %d, CLUSTER KEYSLOT says %d", key, got, want)
		}
	}
}

func FuzzKeySlot(f *testing.F) {
	for _, seed := range []string{"foo", "{a}b", "{}", "{{x}}", "ключ{тег}"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, key string) {
		if s := KeySlot(key); s < 0 || s >= SlotCount {
			t.Errorf("KeySlot(%q) = %d out of range", key, s)
		}
	})
}
