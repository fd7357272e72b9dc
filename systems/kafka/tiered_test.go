package kafka

import (
	"encoding/binary"
	"slices"
	"strings"
	"testing"
	"time"
)

// A leader's offsets must account for every record, local or tiered: a
// new leader answers "nothing tiered" until its remote log task ran, and
// records below its local log would count as untiered.
func TestPartitionOffsetsConsistent(t *testing.T) {
	for _, c := range []struct {
		name string
		o    partitionOffsets
		want bool
	}{
		{"nothing tiered, everything local", partitionOffsets{end: 500, start: 0, local: 0, tiered: -1}, true},
		{"tiered and still local (local retention keeps them)", partitionOffsets{end: 500, start: 0, local: 0, tiered: 299}, true},
		{"tiered segments deleted locally", partitionOffsets{end: 500, start: 0, local: 300, tiered: 299}, true},
		{"a new leader that does not know its tiered offset yet", partitionOffsets{end: 500, start: 0, local: 300, tiered: -1}, false},
		{"a tiered offset behind the local log", partitionOffsets{end: 500, start: 0, local: 300, tiered: 199}, false},
	} {
		if got := c.o.consistent(); got != c.want {
			t.Errorf("%s: %+v consistent = %v, want %v", c.name, c.o, got, c.want)
		}
	}
}

func TestUntieredRecordsOfAPartition(t *testing.T) {
	for _, c := range []struct {
		name string
		o    partitionOffsets
		want int64
	}{
		{"segments tiered, the active one not", partitionOffsets{end: 30000, start: 0, tiered: 29914}, 85},
		{"nothing tiered yet: everything from the log start", partitionOffsets{end: 500, start: 100, tiered: -1}, 400},
		{"everything tiered", partitionOffsets{end: 500, start: 0, tiered: 499}, 0},
		{"local retention deleted tiered segments: the log start is above the tiered offset", partitionOffsets{end: 900, start: 600, tiered: 700}, 199},
		{"empty", partitionOffsets{end: 0, start: 0, tiered: -1}, 0},
	} {
		if got := c.o.untiered(); got != c.want {
			t.Errorf("%s: %+v untiered = %d, want %d", c.name, c.o, got, c.want)
		}
	}
}

// Only topics with tiered storage are read, partition by partition from
// their leader; a partition without a leader cannot be.
func TestTieredPartitionsByLeader(t *testing.T) {
	rs := []int32{1, 2, 3}
	s := snapshotOf(rs, part{1, rs, rs}, part{2, rs, rs}, part{-1, rs, nil})
	s.Topics[0].Tiered.Enabled = false
	if got := tieredPartitionsByLeader(s); len(got) != 0 {
		t.Fatalf("no tiered topic, yet %v", got)
	}
	s.Topics[0].Tiered.Enabled = true
	got := tieredPartitionsByLeader(s)
	if len(got) != 2 || !slices.Equal(got[1], []PartitionKey{{"t", 0}}) || !slices.Equal(got[2], []PartitionKey{{"t", 1}}) {
		t.Errorf("by leader = %v, want t/0 on 1, t/1 on 2, leaderless t/2 left out", got)
	}
}

// batchHeader is a v2 record batch header (61 bytes), without records.
func batchHeader(base int64, lastDelta int32, attributes uint16, first, maxTs int64) []byte {
	b := make([]byte, 61)
	be := binary.BigEndian
	be.PutUint64(b[0:], uint64(base))
	be.PutUint32(b[8:], 500) // batch length: the whole batch, more than was sent
	b[16] = 2
	be.PutUint16(b[21:], attributes)
	be.PutUint32(b[23:], uint32(lastDelta))
	be.PutUint64(b[27:], uint64(first))
	be.PutUint64(b[35:], uint64(maxTs))
	return b
}

// The first untiered record's time comes from its batch header: the
// producer's first timestamp, or the broker's append time on topics that
// use it. Anything that would date other records, or no record, is an
// error: the timestamp is then unknown, never a guess. A broker sends none
// of these malformed answers, hence hand-made bytes.
func TestBatchTimestamp(t *testing.T) {
	const created, appended = 1_780_000_000_000, 1_780_000_005_000
	for _, c := range []struct {
		name    string
		records []byte
		offset  int64
		want    int64
		wantErr string
	}{
		{"create time", batchHeader(1000, 9, 0, created, created+50), 1000, created, ""},
		{"append time: the max timestamp", batchHeader(1000, 9, 0x08, created, appended), 1000, appended, ""},
		{"compressed (lz4), create time", batchHeader(1000, 9, 0x03, created, created+50), 1000, created, ""},
		{"offset inside the batch (a log start moved by DeleteRecords)", batchHeader(1000, 9, 0, created, created+50), 1009, created, ""},
		{"batch after the offset", batchHeader(1010, 9, 0, created, created), 1000, -1, "not 1000"},
		{"batch before the offset", batchHeader(990, 9, 0, created, created), 1000, -1, "not 1000"},
		{"no timestamp (an old producer)", batchHeader(1000, 0, 0, -1, -1), 1000, -1, "no timestamp"},
		{"empty answer", nil, 1000, -1, "no batch header"},
		{"cut before the timestamps", batchHeader(1000, 0, 0, created, created)[:30], 1000, -1, "no batch header"},
		{"old message format", func() []byte { b := batchHeader(1000, 0, 0, created, created); b[16] = 1; return b }(), 1000, -1, "magic 1"},
	} {
		got, err := batchTimestamp(c.records, c.offset)
		if got != c.want || (err == nil) != (c.wantErr == "") || (err != nil && !strings.Contains(err.Error(), c.wantErr)) {
			t.Errorf("%s: %d, %v; want %d, error %q", c.name, got, err, c.want, c.wantErr)
		}
	}
}

// A topic's oldest untiered record is the earliest over its partitions
// that hold any; one such partition whose time is unknown leaves it
// unknown, as the others' minimum could be younger than the truth.
func TestUntieredRecordsOldest(t *testing.T) {
	rs := []int32{1, 2, 3}
	s := snapshotOf(rs, part{1, rs, rs}, part{2, rs, rs}, part{3, rs, rs})
	topic := &s.Topics[0]
	at := func(p int32, end, tiered, ms int64) (PartitionKey, partitionOffsets) {
		return PartitionKey{"t", p}, partitionOffsets{end: end, start: 0, tiered: tiered, firstUntieredMs: ms}
	}
	offsets := map[PartitionKey]partitionOffsets{}
	put := func(k PartitionKey, o partitionOffsets) { offsets[k] = o }
	put(at(0, 100, 49, 5_000))
	put(at(1, 200, 99, 3_000))
	put(at(2, 50, 49, -1)) // everything tiered: no untiered record to date
	u := untieredRecords(topic, offsets)
	if u == nil || u.Records != 150 || u.Partitions != 3 || !u.Oldest.Equal(time.UnixMilli(3_000)) {
		t.Fatalf("untiered = %+v, want 150 records over 3 partitions, oldest at 3 s", u)
	}
	put(at(2, 60, 49, -1)) // 10 untiered records, their time unknown
	if u := untieredRecords(topic, offsets); u.Records != 160 || !u.Oldest.IsZero() {
		t.Errorf("with a partition's time unknown: %+v, want 160 records and no oldest", u)
	}
	put(at(2, 60, 59, -1)) // back to nothing untiered there
	delete(offsets, PartitionKey{"t", 2})
	if u := untieredRecords(topic, offsets); u.Records != 150 || u.Partitions != 2 || !u.Oldest.IsZero() {
		t.Errorf("a partition's leader did not answer: %+v, want 150 records over 2 partitions and no oldest", u)
	}
	if u := untieredRecords(topic, map[PartitionKey]partitionOffsets{}); u != nil {
		t.Errorf("no partition read: %+v, want nil", u)
	}
}
