package mirror

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf8"
)

// MirrorMaker 2's internal records, as connect/mirror-client's
// Checkpoint.java and Heartbeat.java and connect/mirror's OffsetSync.java
// write them with org.apache.kafka.common.protocol.types: a Struct is its
// fields in order, STRING an int16 length and that many UTF-8 bytes,
// INT16/INT32/INT64 big-endian. Checkpoint and heartbeat values start with
// an int16 version (0 is the only one); offset-sync values have none.

// OffsetSync says that the source record at Upstream was written to the
// target at Downstream, for one source partition.
type OffsetSync struct {
	Topic      string
	Partition  int32
	Upstream   int64
	Downstream int64
}

// Checkpoint is a consumer group's committed offset on the source for one
// source partition, and where the group would resume on the target.
type Checkpoint struct {
	Group     string
	Topic     string
	Partition int32
	// Upstream is the group's committed offset on the source when the
	// checkpoint was written; Downstream is that offset translated to the
	// target partition (conservatively: never past it).
	Upstream   int64
	Downstream int64
	Metadata   string
}

// Heartbeat is emitted by MM2 every emit.heartbeats.interval.seconds;
// Timestamp is when, in Unix milliseconds, by the emitting worker's clock.
type Heartbeat struct {
	SourceAlias string
	TargetAlias string
	Timestamp   int64
}

var errTrailing = errors.New("trailing bytes")

// reader reads protocol Struct fields, remembering the first error.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(field string, err error) {
	if r.err == nil {
		r.err = fmt.Errorf("%s: %w", field, err)
	}
}

func (r *reader) take(field string, n int) []byte {
	if r.err != nil {
		return nil
	}
	if n > len(r.b) {
		r.fail(field, fmt.Errorf("need %d bytes, %d left", n, len(r.b)))
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) int16(field string) int16 {
	b := r.take(field, 2)
	if b == nil {
		return 0
	}
	return int16(binary.BigEndian.Uint16(b))
}

func (r *reader) int32(field string) int32 {
	b := r.take(field, 4)
	if b == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b))
}

func (r *reader) int64(field string) int64 {
	b := r.take(field, 8)
	if b == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b))
}

// string reads a STRING: non-nullable, so a negative length is an error
// (Type.STRING refuses it too).
func (r *reader) string(field string) string {
	n := r.int16(field + " length")
	if r.err != nil {
		return ""
	}
	if n < 0 {
		r.fail(field, fmt.Errorf("negative length %d", n))
		return ""
	}
	b := r.take(field, int(n))
	if b == nil {
		return ""
	}
	if !utf8.Valid(b) {
		r.fail(field, errors.New("not UTF-8"))
		return ""
	}
	return string(b)
}

// version reads a value's int16 version header; 0 is the only one MM2
// writes, and a later one may have other fields.
func (r *reader) version() {
	if v := r.int16("version"); r.err == nil && v != 0 {
		r.fail("version", fmt.Errorf("version %d is not 0, the only one known", v))
	}
}

// done is the reader's error, or an error when bytes are left over:
// Schema.read would ignore them, but a record with more than its schema is
// not one of these.
func (r *reader) done(what string) error {
	if r.err == nil && len(r.b) > 0 {
		r.err = fmt.Errorf("%w (%d)", errTrailing, len(r.b))
	}
	if r.err != nil {
		return fmt.Errorf("%s: %w", what, r.err)
	}
	return nil
}

// DecodeOffsetSync decodes a record of the offset-syncs topic.
func DecodeOffsetSync(key, value []byte) (OffsetSync, error) {
	var s OffsetSync
	k := reader{b: key}
	s.Topic = k.string("topic")
	s.Partition = k.int32("partition")
	if err := k.done("offset sync key"); err != nil {
		return OffsetSync{}, err
	}
	v := reader{b: value}
	s.Upstream = v.int64("upstreamOffset")
	s.Downstream = v.int64("offset")
	if err := v.done("offset sync value"); err != nil {
		return OffsetSync{}, err
	}
	return s, nil
}

// DecodeCheckpoint decodes a record of the checkpoints topic. A record
// with a null value (a tombstone) is an error: see DecodeCheckpointKey.
func DecodeCheckpoint(key, value []byte) (Checkpoint, error) {
	c, err := DecodeCheckpointKey(key)
	if err != nil {
		return Checkpoint{}, err
	}
	v := reader{b: value}
	v.version()
	c.Upstream = v.int64("upstreamOffset")
	c.Downstream = v.int64("offset")
	c.Metadata = v.string("metadata")
	if err := v.done("checkpoint value"); err != nil {
		return Checkpoint{}, err
	}
	return c, nil
}

// DecodeCheckpointKey decodes a checkpoint's key alone: the group and
// partition of a tombstone.
func DecodeCheckpointKey(key []byte) (Checkpoint, error) {
	var c Checkpoint
	k := reader{b: key}
	c.Group = k.string("group")
	c.Topic = k.string("topic")
	c.Partition = k.int32("partition")
	if err := k.done("checkpoint key"); err != nil {
		return Checkpoint{}, err
	}
	return c, nil
}

// DecodeHeartbeat decodes a record of a heartbeats topic.
func DecodeHeartbeat(key, value []byte) (Heartbeat, error) {
	var h Heartbeat
	k := reader{b: key}
	h.SourceAlias = k.string("sourceClusterAlias")
	h.TargetAlias = k.string("targetClusterAlias")
	if err := k.done("heartbeat key"); err != nil {
		return Heartbeat{}, err
	}
	v := reader{b: value}
	v.version()
	h.Timestamp = v.int64("timestamp")
	if err := v.done("heartbeat value"); err != nil {
		return Heartbeat{}, err
	}
	return h, nil
}

// The encoders write what MM2 writes; the tests and the lab use them.

func appendString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

// Key and Value encode the sync as MM2's OffsetSync does.
func (s OffsetSync) Key() []byte {
	return binary.BigEndian.AppendUint32(appendString(nil, s.Topic), uint32(s.Partition))
}

// Value encodes the sync's offsets.
func (s OffsetSync) Value() []byte {
	b := binary.BigEndian.AppendUint64(nil, uint64(s.Upstream))
	return binary.BigEndian.AppendUint64(b, uint64(s.Downstream))
}

// Key encodes the checkpoint's group and partition as MM2 does.
func (c Checkpoint) Key() []byte {
	b := appendString(appendString(nil, c.Group), c.Topic)
	return binary.BigEndian.AppendUint32(b, uint32(c.Partition))
}

// Value encodes the checkpoint's offsets, version 0.
func (c Checkpoint) Value() []byte {
	b := binary.BigEndian.AppendUint16(nil, 0)
	b = binary.BigEndian.AppendUint64(b, uint64(c.Upstream))
	b = binary.BigEndian.AppendUint64(b, uint64(c.Downstream))
	return appendString(b, c.Metadata)
}

// Key encodes the heartbeat's aliases as MM2 does.
func (h Heartbeat) Key() []byte { return appendString(appendString(nil, h.SourceAlias), h.TargetAlias) }

// Value encodes the heartbeat's timestamp, version 0.
func (h Heartbeat) Value() []byte {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint16(nil, 0), uint64(h.Timestamp))
}
