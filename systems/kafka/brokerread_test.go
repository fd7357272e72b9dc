package kafka

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"
)

// A read that ended is kept and what went wrong logged at warn once; a
// read that found no broker offering its request clears what was kept
// and pauses the reads for as long as an ApiVersions answer is trusted.
func TestBrokerReaderKeep(t *testing.T) {
	var logged bytes.Buffer
	now := time.Unix(1_700_000_000, 0)
	s := &source{logger: log.NewLogfmtLogger(&logged), now: func() time.Time { return now }}
	var r logDirsReader
	ended := func(read logDirsRead) {
		r.pending = make(chan logDirsRead, 1)
		r.pending <- read
		r.keep(s, logDirsKind)
	}

	r.keep(s, logDirsKind) // none ran
	if r.last != nil || r.running() {
		t.Fatal("a reader that never read keeps something")
	}
	failed := logDirsRead{dirs: map[int32][]LogDir{1: {{Path: "/d"}}}, readOutcome: readOutcome{failed: 1, err: errors.New("broker 2: i/o timeout")}}
	ended(failed)
	ended(failed)
	if r.last == nil || len(r.last.dirs[1]) != 1 || r.running() {
		t.Fatalf("the read that ended was not kept: %+v", r.last)
	}
	if n := strings.Count(logged.String(), "level=warn"); n != 1 {
		t.Errorf("the same failure twice logged %d warnings, want 1:\n%s", n, logged.String())
	}

	ended(logDirsRead{readOutcome: readOutcome{unsupported: true}})
	if r.last != nil {
		t.Error("a read of brokers that cannot say kept the previous read")
	}
	if !r.paused(now) || !r.paused(now.Add(apiVersionsMaxAge-time.Second)) || r.paused(now.Add(apiVersionsMaxAge)) {
		t.Errorf("paused until %s, want %s after the read", r.skipUntil, apiVersionsMaxAge)
	}
}
