package mirror

import (
	"bytes"
	"strings"
	"testing"
)

// Bytes as MM2 writes them (Struct fields in order, STRING = int16
// length + UTF-8, big-endian integers, int16 version before checkpoint
// and heartbeat values), written out by hand.
func TestDecodeMM2Records(t *testing.T) {
	syncKey := []byte{0, 6, 'o', 'r', 'd', 'e', 'r', 's', 0, 0, 0, 3}
	syncValue := []byte{0, 0, 0, 0, 0, 0, 0x01, 0x00, 0, 0, 0, 0, 0, 0, 0, 0x20}
	sync, err := DecodeOffsetSync(syncKey, syncValue)
	if err != nil || sync != (OffsetSync{Topic: "orders", Partition: 3, Upstream: 256, Downstream: 32}) {
		t.Errorf("offset sync: %+v %v", sync, err)
	}
	if !bytes.Equal(sync.Key(), syncKey) || !bytes.Equal(sync.Value(), syncValue) {
		t.Error("offset sync does not encode back to the same bytes")
	}

	checkKey := []byte{0, 2, 'g', '1', 0, 8, 'e', 'u', '.', 'o', 'r', 'd', 'e', 'r', 0, 0, 0, 1}
	checkValue := append([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0, 0, 0, 7}, 0, 2, 'm', 'd')
	c, err := DecodeCheckpoint(checkKey, checkValue)
	want := Checkpoint{Group: "g1", Topic: "eu.order", Partition: 1, Upstream: 10, Downstream: 7, Metadata: "md"}
	if err != nil || c != want {
		t.Errorf("checkpoint: %+v %v", c, err)
	}
	if !bytes.Equal(want.Key(), checkKey) || !bytes.Equal(want.Value(), checkValue) {
		t.Error("checkpoint does not encode back to the same bytes")
	}

	hbKey := []byte{0, 2, 'e', 'u', 0, 2, 'u', 's'}
	hbValue := []byte{0, 0, 0, 0, 0x01, 0x9a, 0, 0, 0, 0}
	h, err := DecodeHeartbeat(hbKey, hbValue)
	if err != nil || h != (Heartbeat{SourceAlias: "eu", TargetAlias: "us", Timestamp: 0x019a00000000}) {
		t.Errorf("heartbeat: %+v %v", h, err)
	}
	if !bytes.Equal(h.Key(), hbKey) || !bytes.Equal(h.Value(), hbValue) {
		t.Error("heartbeat does not encode back to the same bytes")
	}
}

func TestDecodeRefusesMalformed(t *testing.T) {
	good := OffsetSync{Topic: "t", Partition: 0, Upstream: 1, Downstream: 1}
	hb := Heartbeat{SourceAlias: "a", TargetAlias: "b", Timestamp: 1}
	check := Checkpoint{Group: "g", Topic: "t", Upstream: 1, Downstream: 1}
	for _, tc := range []struct {
		name, want string
		decode     func() error
	}{
		{"empty sync key", "topic length", func() error { _, err := DecodeOffsetSync(nil, good.Value()); return err }},
		{"short sync value", "offset", func() error { _, err := DecodeOffsetSync(good.Key(), good.Value()[:12]); return err }},
		{"trailing sync value", "trailing bytes", func() error { _, err := DecodeOffsetSync(good.Key(), append(good.Value(), 0)); return err }},
		{"negative string length", "negative length", func() error { _, err := DecodeOffsetSync([]byte{0xff, 0xff, 0, 0, 0, 0}, good.Value()); return err }},
		{"string past the end", "need 5 bytes", func() error { _, err := DecodeOffsetSync([]byte{0, 5, 'a'}, good.Value()); return err }},
		{"not UTF-8", "not UTF-8", func() error { _, err := DecodeOffsetSync([]byte{0, 1, 0xff, 0, 0, 0, 0}, good.Value()); return err }},
		{"heartbeat version 1", "version 1", func() error {
			_, err := DecodeHeartbeat(hb.Key(), append([]byte{0, 1}, hb.Value()[2:]...))
			return err
		}},
		{"checkpoint without metadata", "metadata length", func() error {
			v := check.Value()
			_, err := DecodeCheckpoint(check.Key(), v[:len(v)-2])
			return err
		}},
		{"checkpoint tombstone", "version", func() error { _, err := DecodeCheckpoint(check.Key(), nil); return err }},
	} {
		err := tc.decode()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.want)
		}
	}
}

// The decoders never panic, and what decodes encodes back to its input.
func FuzzDecodeMM2Records(f *testing.F) {
	f.Add(OffsetSync{Topic: "orders", Partition: 3, Upstream: 256, Downstream: 32}.Key(), OffsetSync{Upstream: 1}.Value())
	f.Add(Checkpoint{Group: "g", Topic: "eu.t", Metadata: "m"}.Key(), Checkpoint{Metadata: "m"}.Value())
	f.Add(Heartbeat{SourceAlias: "eu", TargetAlias: "us"}.Key(), Heartbeat{Timestamp: 1}.Value())
	f.Add([]byte{0xff, 0xff}, []byte{0})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		if s, err := DecodeOffsetSync(key, value); err == nil {
			if !bytes.Equal(s.Key(), key) || !bytes.Equal(s.Value(), value) {
				t.Errorf("offset sync %+v does not encode back", s)
			}
		}
		if c, err := DecodeCheckpoint(key, value); err == nil {
			if !bytes.Equal(c.Key(), key) || !bytes.Equal(c.Value(), value) {
				t.Errorf("checkpoint %+v does not encode back", c)
			}
		}
		if h, err := DecodeHeartbeat(key, value); err == nil {
			if !bytes.Equal(h.Key(), key) || !bytes.Equal(h.Value(), value) {
				t.Errorf("heartbeat %+v does not encode back", h)
			}
		}
	})
}
