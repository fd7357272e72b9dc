// Package lease holds the clock rules that let several exporters of one
// cluster share its write canary: exactly one of them writes at a time,
// and one that lost the lease has stopped writing before another starts.
//
// The lease itself lives in the watched cluster (a key per Redis master,
// see rediscanary); the store grants or refuses each attempt to take or
// extend it for ttl. What is safe to do with a grant is decided here, on
// the exporter's own monotonic clock:
//
//   - A grant is good until ttl after the attempt was sent, less a tenth:
//     the store counts its ttl from when the attempt reached it, later.
//     Past that, the holder stops writing, whether or not it heard back
//     (a holder that was paused or cut off finds its lease lapsed).
//   - A new holder waits before it writes (one ttl for a Redis lease). If
//     the store lost the previous holder's grant early (a failover to a
//     replica that lacked it, an eviction), that holder may still believe
//     in it for up to one ttl; after the wait it cannot. A store that never
//     hands a grant on before it ran out (a Kafka group coordinator, which
//     keeps its members in a replicated log) needs no wait.
//
// So after a holder dies the lease moves within ttl plus one attempt, and
// its successor writes after its wait.
package lease

import (
	"context"
	"sync"
	"time"
)

// Lease is one exporter's view of its hold on a cluster's canary lease.
// It is safe for concurrent use: the attempts run on their own schedule,
// the writes on the canary's.
type Lease struct {
	ttl, wait time.Duration

	mu         sync.Mutex
	held       bool
	tenure     uint64 // counts grants that started a hold
	writeFrom  time.Time
	validUntil time.Time
}

// New returns a lease not held, whose grants last ttl and whose new
// holders wait before they write.
func New(ttl, wait time.Duration) *Lease { return &Lease{ttl: ttl, wait: wait} }

// TTL is how long a grant lasts.
func (l *Lease) TTL() time.Duration { return l.ttl }

// Record records the outcome of one attempt to take or extend the lease,
// sent at sent (taken before any request left): granted when the store
// granted it. It reports whether the lease is held now and whether this
// attempt started or ended a hold.
func (l *Lease) Record(sent time.Time, granted bool) (held, changed bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	lapsed := !l.held || !sent.Before(l.validUntil)
	switch {
	case granted && lapsed:
		// A new hold, even when our previous one merely lapsed: someone
		// else may have held the lease since our last grant, and may still
		// believe in theirs for up to one ttl.
		l.held, l.tenure, l.writeFrom = true, l.tenure+1, sent.Add(l.wait)
		l.validUntil = sent.Add(l.ttl - l.ttl/10)
		changed = true
	case granted:
		l.validUntil = sent.Add(l.ttl - l.ttl/10)
	case l.held && lapsed:
		l.held, changed = false, true
	}
	return l.held, changed
}

// Drop ends the hold at once, when the store said it is another's (a
// new generation of the group with another leader, a member it removed).
// It reports whether a hold ended.
func (l *Lease) Drop() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	was := l.held
	l.held = false
	return was
}

// Held reports whether the lease is held at now (a holder waiting to
// write holds it).
func (l *Lease) Held(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held && now.Before(l.validUntil)
}

// MayWrite reports whether the holder may write at now: it holds the
// lease and has waited out its predecessor's.
func (l *Lease) MayWrite(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held && now.Before(l.validUntil) && !now.Before(l.writeFrom)
}

// Tenure identifies the current hold: it changes with every grant that
// starts one, so that a writer can tell that its state from an earlier
// hold is stale (another exporter wrote in between).
func (l *Lease) Tenure() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.tenure
}

// Attempts owns the goroutine that attempts the lease on its own schedule,
// apart from the canary's rounds. It starts once, at the first round, so
// that a source does no I/O before it runs, and stops when the source
// closes. The zero value is ready to use.
type Attempts struct {
	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// Start runs run on a goroutine of its own until Stop, unless a Start
// succeeded before. setup, when not nil, first builds what run needs; if
// it fails, nothing runs and its error is returned, and the next Start
// tries again.
func (a *Attempts) Start(setup func() error, run func(ctx context.Context)) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.done != nil {
		return nil
	}
	if setup != nil {
		if err := setup(); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	a.cancel, a.done = cancel, make(chan struct{})
	go func() {
		defer close(a.done)
		run(ctx)
	}()
	return nil
}

// Stop cancels run's context and waits for it to return. It reports
// whether the attempts were started, so that the caller gives back a
// lease it may hold.
func (a *Attempts) Stop() bool {
	a.mu.Lock()
	cancel, done := a.cancel, a.done
	a.mu.Unlock()
	if done == nil {
		return false
	}
	cancel()
	<-done
	return true
}
