package redis

import "testing"

func TestKeySlot(t *testing.T) {
	tests := map[string]int{
		"foo":                  12182,
		"bar":                  5061,
		"123456789":            12739, // CRC16/XMODEM check value 0x31C3
		"":                     0,
		"{user1000}.following": 3443,
		"{user1000}.followers": 3443,
		"user1000":             3443,
		"foo{}{bar}":           KeySlot("foo{}{bar}"), // whole key: the first tag is empty
		"foo{{bar}}zap":        KeySlot("{bar"),       // tag is "{bar"
		"foo{bar}{zap}":        5061,                  // only the first tag counts
		"{bar":                 KeySlot("{bar"),
	}
	for key, want := range tests {
		if got := KeySlot(key); got != want {
			t.Errorf("KeySlot(%q) = %d, want %d", key, got, want)
		}
	}
	if KeySlot("foo{}{bar}") == KeySlot("bar") {
		t.Error(`"foo{}{bar}" must hash the whole key, not "bar"`)
	}
	if KeySlot("{}") != int(crc16("{}")%SlotCount) {
		t.Error(`"{}" must hash the whole key`)
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
