package watch

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-kit/log"
)

type snap struct{ n int }

func TestRefreshOncePublishesAndKeepsLastGoodSnapshot(t *testing.T) {
	results := []error{nil, errors.New("down"), nil}
	calls := 0
	var sawPrev []*snap
	w := New("c", time.Second, time.Second, func(_ context.Context, prev *snap) (*snap, error) {
		sawPrev = append(sawPrev, prev)
		err := results[calls]
		calls++
		if err != nil {
			return nil, err
		}
		return &snap{n: calls}, nil
	}, log.NewNopLogger())

	if st := w.Current(); st.Up || st.Snapshot != nil || st.Refreshes != 0 {
		t.Fatalf("before any refresh: %+v", st)
	}
	select {
	case <-w.Ready():
		t.Fatal("ready before the first refresh")
	default:
	}

	w.RefreshOnce(context.Background())
	st := w.Current()
	if !st.Up || st.Snapshot.n != 1 || st.LastSuccess.IsZero() || st.Refreshes != 1 {
		t.Fatalf("after a good refresh: %+v", st)
	}
	<-w.Ready()

	w.RefreshOnce(context.Background())
	st = w.Current()
	if st.Up || st.Snapshot.n != 1 || st.Failures != 1 || st.LastError == nil || st.Refreshes != 2 {
		t.Fatalf("after a failed refresh the last good snapshot is kept but Up is false: %+v", st)
	}

	w.RefreshOnce(context.Background())
	if sawPrev[2] == nil || sawPrev[2].n != 1 {
		t.Errorf("third refresh got prev %+v, want the last good snapshot (1)", sawPrev[2])
	}
	if st = w.Current(); !st.Up || st.Snapshot.n != 3 {
		t.Errorf("after recovery: %+v", st)
	}
}

func TestRefreshIsBoundedByTimeout(t *testing.T) {
	w := New("c", time.Second, 50*time.Millisecond, func(ctx context.Context, _ *snap) (*snap, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}, log.NewNopLogger())
	start := time.Now()
	w.RefreshOnce(context.Background())
	if took := time.Since(start); took > 500*time.Millisecond {
		t.Errorf("refresh took %s with a 50ms timeout", took)
	}
	if st := w.Current(); st.Up || !errors.Is(st.LastError, context.DeadlineExceeded) {
		t.Errorf("state = %+v, want a deadline error", st)
	}
}

func TestRunStopsAndCallsHooks(t *testing.T) {
	var refreshes, published, stopped atomic.Int32
	w := New("c", 10*time.Millisecond, 10*time.Millisecond, func(context.Context, *snap) (*snap, error) {
		refreshes.Add(1)
		return &snap{}, nil
	}, log.NewNopLogger())
	w.OnPublish(func() { published.Add(1) })
	w.OnStop(func() { stopped.Add(1) })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	<-w.Ready()
	time.Sleep(50 * time.Millisecond)
	cancel()
	select {
	case <-done:
	case <-time.After(time.Second):
		t.Fatal("Run did not return after cancel")
	}
	if refreshes.Load() < 2 || published.Load() != refreshes.Load() || stopped.Load() != 1 {
		t.Errorf("refreshes %d, published %d, stopped %d", refreshes.Load(), published.Load(), stopped.Load())
	}
}

// TestFailingForAnotherReasonIsLoggedAgain: a refresh that keeps failing is
// logged at warn once, and again when its reason changes (a timeout at
// start, then the server's refusal: the refusal is what the user must
// read); the same reason with other numbers stays at debug.
func TestFailingForAnotherReasonIsLoggedAgain(t *testing.T) {
	results := []error{
		errors.New("connect: no answer within 110ms"),
		errors.New("connect: no answer within 98ms"),
		errors.New("not authorized to send this request type"),
		errors.New("not authorized to send this request type"),
	}
	calls := 0
	var out bytes.Buffer
	w := New("c", time.Second, time.Second, func(_ context.Context, _ *snap) (*snap, error) {
		err := results[calls]
		calls++
		return nil, err
	}, log.NewLogfmtLogger(&out))
	for range results {
		w.RefreshOnce(context.Background())
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		got = append(got, line[:strings.Index(line, " err=")])
	}
	want := []string{`level=warn msg="refresh failed"`, `level=debug msg="refresh still failing"`, `level=warn msg="refresh failed"`, `level=debug msg="refresh still failing"`}
	if !slices.Equal(got, want) {
		t.Errorf("log lines %q, want %q:\n%s", got, want, out.String())
	}
}
