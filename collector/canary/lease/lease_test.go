package lease

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// The rules on a clock the test moves: a grant starts a hold that may
// write one ttl later; renewals keep it; without them it lapses ttl (less
// a tenth) after the last grant was sent; a grant after a lapse is a new
// hold that waits again.
func TestLeaseClockRules(t *testing.T) {
	const ttl = time.Second
	l := New(ttl, ttl)
	t0 := time.Now()
	at := func(d time.Duration) time.Time { return t0.Add(d) }

	if l.Held(t0) || l.MayWrite(t0) {
		t.Fatal("a new lease is held")
	}
	if held, changed := l.Record(at(0), false); held || changed {
		t.Fatalf("a refused attempt: held %v, changed %v", held, changed)
	}
	if held, changed := l.Record(at(0), true); !held || !changed {
		t.Fatalf("a grant: held %v, changed %v, want a new hold", held, changed)
	}
	first := l.Tenure()
	if !l.Held(at(100*time.Millisecond)) || l.MayWrite(at(100*time.Millisecond)) {
		t.Error("just granted: want held, not yet writing (it waits out its predecessor)")
	}
	// Renewed every 300 ms, it writes from one ttl after the grant.
	for d := 300 * time.Millisecond; d <= 1500*time.Millisecond; d += 300 * time.Millisecond {
		if held, changed := l.Record(at(d), true); !held || changed {
			t.Fatalf("renewal at %s: held %v, changed %v", d, held, changed)
		}
	}
	if l.MayWrite(at(999*time.Millisecond)) || !l.MayWrite(at(ttl)) || !l.MayWrite(at(2*time.Second)) {
		t.Error("a renewed hold writes from ttl after its grant, and on")
	}
	// No more grants: the last was sent at 1.5 s, good until 1.5 s + 0.9 ttl.
	if !l.MayWrite(at(2399*time.Millisecond)) || l.MayWrite(at(2400*time.Millisecond)) || l.Held(at(2400*time.Millisecond)) {
		t.Error("a hold stops 0.9 ttl after its last grant was sent")
	}
	if held, changed := l.Record(at(2*time.Second), false); !held || changed {
		t.Errorf("a refused renewal while still valid: held %v, changed %v, want still held", held, changed)
	}
	if held, changed := l.Record(at(2500*time.Millisecond), false); held || !changed {
		t.Errorf("a refused renewal after the lapse: held %v, changed %v, want the hold ended", held, changed)
	}
	// Granted again after a lapse (a paused holder waking to find the lease
	// free): a new hold, which waits a ttl again.
	if held, changed := l.Record(at(5*time.Second), true); !held || !changed {
		t.Fatalf("a grant after a lapse: held %v, changed %v", held, changed)
	}
	if l.Tenure() == first || l.MayWrite(at(5500*time.Millisecond)) {
		t.Error("a grant after a lapse must start a new tenure that waits before writing")
	}
	// Granted at once after lapsing with no refusal in between: new too.
	l.Record(at(5300*time.Millisecond), true)
	second := l.Tenure()
	if held, changed := l.Record(at(7*time.Second), true); !held || !changed || l.Tenure() == second {
		t.Errorf("a grant 1.7 s after the previous (lapsed at 6.2 s): held %v, changed %v, tenure %d (was %d), want a new tenure", held, changed, l.Tenure(), second)
	}
}

// A lease whose store never hands a grant on early (a Kafka group) writes
// at once; Drop, the store saying the lease is another's, ends a hold
// that the clock still allows, and the next grant starts a new tenure.
func TestLeaseWithoutWaitAndDrop(t *testing.T) {
	const ttl = 6 * time.Second
	l := New(ttl, 0)
	t0 := time.Now()
	l.Record(t0, true)
	if !l.MayWrite(t0) {
		t.Fatal("a lease without a wait must write from its grant")
	}
	first := l.Tenure()
	if !l.Drop() || l.Held(t0.Add(time.Second)) || l.MayWrite(t0.Add(time.Second)) {
		t.Fatal("after Drop the hold must be over although its grant is still good")
	}
	if l.Drop() {
		t.Error("Drop of a lease not held reports a hold ended")
	}
	if held, changed := l.Record(t0.Add(2*time.Second), true); !held || !changed || l.Tenure() == first {
		t.Errorf("a grant after Drop: held %v, changed %v, tenure %d (was %d), want a new hold", held, changed, l.Tenure(), first)
	}
}

// Attempts run once: a failed setup starts nothing and is tried again, a
// later Start does nothing, and Stop waits for the goroutine to return.
func TestAttemptsStartOnceStopWaits(t *testing.T) {
	var a Attempts
	if a.Stop() {
		t.Error("Stop before any Start reports attempts started")
	}
	var runs, setups atomic.Int32
	returned := make(chan struct{})
	run := func(ctx context.Context) {
		runs.Add(1)
		<-ctx.Done()
		time.Sleep(10 * time.Millisecond) // Stop must wait for this
		close(returned)
	}
	refused := errors.New("refused")
	if err := a.Start(func() error { setups.Add(1); return refused }, run); !errors.Is(err, refused) {
		t.Fatalf("Start with a failing setup: %v, want its error", err)
	}
	if err := a.Start(func() error { setups.Add(1); return nil }, run); err != nil {
		t.Fatal(err)
	}
	if err := a.Start(func() error { setups.Add(1); return nil }, run); err != nil {
		t.Fatal(err)
	}
	if !a.Stop() {
		t.Error("Stop after Start reports no attempts")
	}
	select {
	case <-returned:
	default:
		t.Error("Stop returned before the attempts did")
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("%d runs, want 1", n)
	}
	if n := setups.Load(); n != 2 {
		t.Errorf("%d setups, want 2 (the failed one, then the one that started)", n)
	}
}
