package keycanary

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-kit/log"

	redisproto "github.com/failover-exporter/failover_exporter/systems/redis/proto"
	"github.com/failover-exporter/failover_exporter/systems/redis/settings"
)

// newTestEngine is the engine of cfg's canary, closed when the test ends.
func newTestEngine(t *testing.T, cfg settings.Cluster, logger log.Logger) *Engine {
	t.Helper()
	option, err := redisproto.ClientOption(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(cfg.Canary, cfg.CommandTimeout, option, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

// syncBuffer is a log the lease's goroutines may write while a test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A lease attempt cut short by a stop or a reload (its context cancelled)
// is neither an ACL problem nor a failing master: nothing is logged. The
// same attempt not cancelled, against a port that refuses connections, is
// logged as failing, without the ACL hint, which is for NOPERM alone.
func TestCancelledLeaseAttemptIsNotLogged(t *testing.T) {
	// A port nobody listens on: take one, then free it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()

	var logged syncBuffer
	cfg := settings.Cluster{
		Addrs:          []string{addr},
		DialTimeout:    200 * time.Millisecond,
		CommandTimeout: 200 * time.Millisecond,
		Canary:         settings.Canary{Enabled: true, Interval: time.Second, KeyPrefix: "p:", KeyTTL: time.Hour},
	}
	s := newTestEngine(t, cfg, log.NewLogfmtLogger(&logged))
	s.lease.setTargets([]leaseTarget{{id: "a", addr: addr, key: "p:lease{0}"}})

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s.attemptLease(ctx)
	if text := logged.String(); strings.Contains(text, "lease attempt failing") {
		t.Errorf("a cancelled lease attempt was logged as failing:\n%s", text)
	}

	s.attemptLease(context.Background())
	text := logged.String()
	if !strings.Contains(text, "lease attempt failing") || !strings.Contains(text, "error=connection") {
		t.Errorf("a refused lease attempt was not logged as failing with error=connection:\n%s", text)
	}
	if strings.Contains(text, "+eval") {
		t.Errorf("a refused connection was logged as an ACL problem:\n%s", text)
	}
}
