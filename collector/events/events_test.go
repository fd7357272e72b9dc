package events

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/failover-exporter/failover_exporter/collector/watch"
)

// Kinds of the systems that the tests use, as their packages (which
// import this one) spell them.
const (
	KafkaBrokerDown       Kind = "broker_down"
	KafkaISRShrink        Kind = "isr_shrink"
	KafkaLeaderChange     Kind = "leader_change"
	KafkaPartitionOffline Kind = "partition_offline"
	KafkaPartitionOnline  Kind = "partition_online"
	RedisNodeFail         Kind = "node_fail"
	RedisPromotion        Kind = "promotion"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func listOf(n int, at time.Time, kind Kind) []Event {
	var l List
	for i := range n {
		l.Add(at, kind, PartitionSubject("t", int32(i)), "", "")
	}
	return l.All()
}

func TestLogKeepsTheNewestNewestFirst(t *testing.T) {
	var out bytes.Buffer
	l := NewLog(3, log.NewLogfmtLogger(&out))
	l.Record("kafka", "a", listOf(2, t0, KafkaLeaderChange))
	l.Record("redis", "b", listOf(1, t0.Add(time.Second), RedisPromotion))
	l.Record("kafka", "a", listOf(1, t0.Add(2*time.Second), KafkaISRShrink))

	got := l.Query("", "", time.Time{}, 0)
	if len(got) != 3 {
		t.Fatalf("kept %d events, want the capacity 3: %+v", len(got), got)
	}
	if got[0].Kind != KafkaISRShrink || got[1].Kind != RedisPromotion || got[2].Kind != KafkaLeaderChange || *got[2].Subject.Partition != 1 {
		t.Errorf("not newest first, or the oldest not dropped: %+v", got)
	}
	if got[1].System != "redis" || got[1].Cluster != "b" {
		t.Errorf("system and cluster not stamped: %+v", got[1])
	}
	if a := l.Query("", "a", time.Time{}, 0); len(a) != 2 || a[0].Cluster != "a" || a[1].Cluster != "a" {
		t.Errorf("cluster filter: %+v", a)
	}
	if r := l.Query("redis", "", time.Time{}, 0); len(r) != 1 || r[0].System != "redis" {
		t.Errorf("system filter: %+v", r)
	}
	if none := l.Query("redis", "a", time.Time{}, 0); len(none) != 0 {
		t.Errorf("redis cluster a has no events, got %+v", none)
	}
	if recent := l.Query("", "", t0.Add(time.Second), 0); len(recent) != 2 {
		t.Errorf("since filter kept %d, want 2", len(recent))
	}
	if one := l.Query("", "", time.Time{}, 1); len(one) != 1 || one[0].Kind != KafkaISRShrink {
		t.Errorf("limit: %+v", one)
	}
	logged := out.String()
	if n := strings.Count(logged, `msg="cluster event"`); n != 4 {
		t.Errorf("logged %d events, want every recorded one (4):\n%s", n, logged)
	}
	for _, want := range []string{"level=info", "system=redis", "cluster=b", "kind=promotion", "kind=leader_change", "topic=t", "partition=0"} {
		if !strings.Contains(logged, want) {
			t.Errorf("log lacks %s:\n%s", want, logged)
		}
	}
}

func TestListTruncatesABurst(t *testing.T) {
	evs := listOf(MaxPerRefresh+5, t0, KafkaISRShrink)
	if len(evs) != MaxPerRefresh+1 {
		t.Fatalf("%d events, want %d and one truncation marker", len(evs), MaxPerRefresh)
	}
	if last := evs[len(evs)-1]; last.Kind != EventsTruncated || last.After != "5" {
		t.Errorf("marker %+v, want events_truncated after=5", last)
	}
}

func TestHandler(t *testing.T) {
	l := NewLog(10, log.NewNopLogger())
	l.Record("kafka", "a", listOf(1, t0, KafkaPartitionOffline))
	l.Record("kafka", "b", listOf(1, t0.Add(time.Minute), KafkaPartitionOnline))
	known := func() map[string][]string { return map[string][]string{"kafka": {"a", "b"}} }
	get := func(query string) (int, string) {
		rec := httptest.NewRecorder()
		l.Handler(known).ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/events"+query, nil))
		return rec.Code, rec.Body.String()
	}
	code, body := get("?cluster=a")
	var resp Response
	if err := json.Unmarshal([]byte(body), &resp); err != nil || code != 200 {
		t.Fatalf("%d %s: %v", code, body, err)
	}
	if len(resp.Events) != 1 || resp.Events[0].Kind != KafkaPartitionOffline || *resp.Events[0].Subject.Partition != 0 {
		t.Errorf("events %+v", resp.Events)
	}
	if !strings.Contains(body, `"partition":0`) || !strings.Contains(body, `"time":"2026-03-01T12:00:00Z"`) {
		t.Errorf("body %s", body)
	}
	if _, body := get("?since=" + t0.Add(30*time.Second).Format(time.RFC3339)); !strings.Contains(body, "partition_online") || strings.Contains(body, "partition_offline") {
		t.Errorf("since filter: %s", body)
	}
	if _, body := get("?since=" + t0.Add(2*time.Minute).Format(time.RFC3339)); !strings.HasPrefix(strings.TrimSpace(body), `{"events":[],`) {
		t.Errorf("no match should be an empty list: %s", body)
	}
	for _, bad := range []string{"?since=yesterday", "?since=-5m", "?limit=0", "?limit=x"} {
		if code, body := get(bad); code != 400 || !strings.Contains(body, "want") {
			t.Errorf("%s: %d %s, want 400 with a message", bad, code, body)
		}
	}
	rec := httptest.NewRecorder()
	l.Handler(known).ServeHTTP(rec, httptest.NewRequest("POST", "/api/v1/events", nil))
	if rec.Code != 405 {
		t.Errorf("POST: %d", rec.Code)
	}
}

// TestHistoryBegins: a log's history begins at its start (an exporter that
// started mid-incident knows nothing before), and once full at the newest
// event it let go; /api/v1/events says so beside the events.
func TestHistoryBegins(t *testing.T) {
	before := time.Now()
	l := NewLog(2, log.NewNopLogger())
	after := time.Now()
	if b := l.Begins(); b.Before(before) || b.After(after) {
		t.Fatalf("a new log begins at %s, want its start (%s..%s)", b, before, after)
	}
	start := l.Begins()
	// Backdated events (the outage clock dates a failure at its first
	// sign) older than the start do not move it while the ring holds them.
	l.Record("kafka", "a", listOf(2, before.Add(-time.Hour), KafkaBrokerDown))
	if l.Begins() != start {
		t.Errorf("begins %s after two events in a ring of two, want the start %s", l.Begins(), start)
	}
	// A third event lets the oldest go: still older than the start.
	l.Record("kafka", "a", listOf(1, after.Add(time.Minute), KafkaLeaderChange))
	if l.Begins() != start {
		t.Errorf("begins %s after letting go of an event older than the start, want the start", l.Begins())
	}
	// Letting go of an event newer than the start moves it there.
	l.Record("kafka", "a", listOf(1, after.Add(2*time.Minute), KafkaLeaderChange))
	l.Record("kafka", "a", listOf(1, after.Add(3*time.Minute), KafkaLeaderChange))
	if want := after.Add(time.Minute); !l.Begins().Equal(want) {
		t.Errorf("begins %s after letting go of the event at %s, want that event's time", l.Begins(), want)
	}
	rec := httptest.NewRecorder()
	l.Handler(nil).ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/events", nil))
	var resp Response
	if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
		t.Fatal(err)
	}
	if !resp.HistoryBegins.Equal(l.Begins()) || len(resp.Events) != 2 {
		t.Errorf("history_begins %s with %d events, want %s with 2", resp.HistoryBegins, len(resp.Events), l.Begins())
	}
}

// TestHandlerSystems: names are unique only within a system, so the same
// name in Kafka and Redis stays apart with ?system=; a name nobody knows
// is answered with what is known, not with an empty list that reads as
// "all quiet".
func TestHandlerSystems(t *testing.T) {
	l := NewLog(10, log.NewNopLogger())
	l.Record("kafka", "prod", listOf(1, t0, KafkaBrokerDown))
	l.Record("redis", "prod", listOf(1, t0, RedisPromotion))
	// A cluster removed by a reload: its events are kept, so it is known.
	l.Record("redis", "old", listOf(1, t0, RedisNodeFail))
	known := func() map[string][]string {
		return map[string][]string{"kafka": {"prod", "quiet"}, "redis": {"prod"}}
	}
	get := func(query string) (int, []Event, string) {
		t.Helper()
		rec := httptest.NewRecorder()
		l.Handler(known).ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/events"+query, nil))
		var resp Response
		if rec.Code == 200 {
			if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
				t.Fatalf("%s: %v", query, err)
			}
		}
		return rec.Code, resp.Events, rec.Body.String()
	}
	kinds := func(evs []Event) (out []string) {
		for _, e := range evs {
			out = append(out, e.System+"/"+e.Cluster+"/"+string(e.Kind))
		}
		return out
	}
	for query, want := range map[string][]string{
		"?system=kafka&cluster=prod":  {"kafka/prod/broker_down"},
		"?system=redis&cluster=prod":  {"redis/prod/promotion"},
		"?cluster=prod":               {"redis/prod/promotion", "kafka/prod/broker_down"},
		"?system=redis":               {"redis/old/node_fail", "redis/prod/promotion"},
		"?system=redis&cluster=old":   {"redis/old/node_fail"},
		"?system=kafka&cluster=quiet": nil,
	} {
		code, evs, body := get(query)
		if code != 200 || strings.Join(kinds(evs), " ") != strings.Join(want, " ") {
			t.Errorf("%s: %d %v (%s), want %v", query, code, kinds(evs), body, want)
		}
	}
	for query, want := range map[string]string{
		"?system=mysql":               `unknown system "mysql"; systems with configured clusters: "kafka", "redis"`,
		"?system=mysql&cluster=prod":  `unknown system "mysql"`,
		"?cluster=nope":               `unknown cluster "nope"; configured clusters: kafka "prod", kafka "quiet", redis "prod"`,
		"?system=redis&cluster=quiet": `unknown redis cluster "quiet"; configured clusters: kafka "prod", kafka "quiet", redis "prod"`,
	} {
		if code, _, body := get(query); code != 400 || !strings.Contains(body, want) {
			t.Errorf("%s: %d %q, want 400 saying %q", query, code, body, want)
		}
	}
}

func TestParseSinceDuration(t *testing.T) {
	now := t0
	got, err := ParseSince("15m", now)
	if err != nil || !got.Equal(now.Add(-15*time.Minute)) {
		t.Errorf("15m: %v %v", got, err)
	}
}

type snap struct{ events []Event }

func TestFollowRecordsEachSnapshotOnce(t *testing.T) {
	results := []any{
		&snap{listOf(1, t0, KafkaLeaderChange)},
		context.DeadlineExceeded, // a failed refresh republishes the previous snapshot
		&snap{listOf(2, t0.Add(time.Second), KafkaISRShrink)},
	}
	i := 0
	w := watch.New("a", time.Second, time.Second, func(context.Context, *snap) (*snap, error) {
		r := results[i]
		i++
		if err, ok := r.(error); ok {
			return nil, err
		}
		return r.(*snap), nil
	}, log.NewNopLogger())
	l := NewLog(10, log.NewNopLogger())
	Follow(l, "kafka", "a", w, func(s *snap) []Event { return s.events })
	for range results {
		w.RefreshOnce(context.Background())
	}
	if got := l.Query("", "", time.Time{}, 0); len(got) != 3 {
		t.Errorf("recorded %d events, want 3 (none twice): %+v", len(got), got)
	}
}

func TestParseSince(t *testing.T) {
	now := t0
	for _, c := range []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"", time.Time{}, true},
		{"15m", now.Add(-15 * time.Minute), true},
		{"1h30m", now.Add(-90 * time.Minute), true},
		{"2026-03-01T11:00:00Z", t0.Add(-time.Hour), true},
		{"2026-03-01T12:00:00.5+01:00", time.Date(2026, 3, 1, 11, 0, 0, 5e8, time.UTC), true},
		{"0s", time.Time{}, false},
		{"-5m", time.Time{}, false},
		{"yesterday", time.Time{}, false},
		{"2026-03-01", time.Time{}, false},
		{"1700000000", time.Time{}, false},
	} {
		got, err := ParseSince(c.in, now)
		if (err == nil) != c.ok || (c.ok && !got.Equal(c.want)) {
			t.Errorf("ParseSince(%q) = %v, %v; want %v, ok %v", c.in, got, err, c.want, c.ok)
		}
	}
}

func FuzzParseSince(f *testing.F) {
	for _, s := range []string{"", "15m", "2026-03-01T11:00:00Z", "-1h", "9999999999h", "2026-13-40T99:99:99Z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseSince(s, t0)
		if err != nil {
			if !strings.Contains(err.Error(), "since") {
				t.Errorf("error %q does not name the parameter", err)
			}
			return
		}
		if s != "" && got.IsZero() {
			t.Errorf("ParseSince(%q) accepted but gave no time", s)
		}
	})
}
