package episode

import (
	"testing"
	"time"
)

func TestObserveIsCumulativeAndCopies(t *testing.T) {
	var h *Histogram
	h1 := h.ObserveDuration(3 * time.Second)
	h2 := h1.ObserveDuration(2 * time.Hour)
	h3 := h2.ObserveDuration(500 * time.Millisecond)
	if h1.Count != 1 || h2.Count != 2 || h3.Count != 3 {
		t.Fatalf("counts %d %d %d", h1.Count, h2.Count, h3.Count)
	}
	if h3.Sum != 3+7200+0.5 {
		t.Errorf("sum %v", h3.Sum)
	}
	want := map[float64]uint64{0.5: 1, 1: 1, 2.5: 1, 5: 2, 3600: 2}
	for i, le := range Buckets {
		if w, ok := want[le]; ok && h3.Cumulative[i] != w {
			t.Errorf("le=%v: %d, want %d", le, h3.Cumulative[i], w)
		}
	}
	// le is inclusive: exactly 0.5 s falls in the 0.5 bucket.
	if h3.Cumulative[0] != 1 {
		t.Errorf("0.5 s not in le=0.5")
	}
	if h1.Cumulative[len(Buckets)-1] != 1 || h1.Count != 1 {
		t.Errorf("observing into a copy changed the original: %+v", h1)
	}
}

func TestStep(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

	// Exporter starts while "a" is already bad: an episode of unknown start.
	never := func(string) Open { return Open{Since: at(-100)} }
	always := func(string) Open { return Open{Since: at(5), StartSeen: true} }
	open, ended := Step[string](nil, at(0), []string{"a"}, never)
	if len(ended) != 0 || open["a"].StartSeen || !open["a"].Since.Equal(at(0)) {
		t.Fatalf("first refresh: open %v ended %v", open, ended)
	}
	// "b" goes bad: its start is seen.
	open, ended = Step(open, at(5), []string{"a", "b", "b"}, always)
	if len(ended) != 0 || !open["b"].StartSeen || !open["b"].Since.Equal(at(5)) || open["a"].Since != at(0) {
		t.Fatalf("second refresh: open %v ended %v", open, ended)
	}
	// Both recover in the same refresh.
	open, ended = Step(open, at(12), nil, always)
	if open != nil || len(ended) != 2 {
		t.Fatalf("third refresh: open %v ended %v", open, ended)
	}
	for _, e := range ended {
		switch e.Key {
		case "a":
			if e.StartSeen || e.Duration != 12*time.Second {
				t.Errorf("a: %+v", e)
			}
		case "b":
			if !e.StartSeen || e.Duration != 7*time.Second {
				t.Errorf("b: %+v", e)
			}
		}
	}
	if age := (Open{Since: at(3)}).Age(at(10)); age != 7*time.Second {
		t.Errorf("age %v", age)
	}
}

func TestBackdate(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	const limit = time.Minute
	for _, tc := range []struct {
		name        string
		confirmed   time.Time
		firstFailed time.Time
		limit       time.Duration
		want        time.Time
	}{
		{"confirmed after a failed probe", at(10), at(2.5), limit, at(2.5)},
		{"no failed probe: the cluster's view begins it", at(10), time.Time{}, limit, at(10)},
		{"probe failed in the confirming refresh", at(10), at(10), limit, at(10)},
		{"failed probe older than the limit: the exporter's network", at(100), at(10), limit, at(100)},
		{"at the limit", at(70), at(10), limit, at(10)},
		{"limit 0: off", at(10), at(2.5), 0, at(10)},
		{"a probe time after the confirmation is not a start", at(10), at(11), limit, at(10)},
	} {
		if got := Backdate(tc.confirmed, tc.firstFailed, tc.limit); !got.Equal(tc.want) {
			t.Errorf("%s: Backdate = %v, want %v", tc.name, got.Sub(t0), tc.want.Sub(t0))
		}
	}
}

func TestFailedSinceAndEvidence(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	var zero time.Time

	// The exporter's first look at a node that does not answer: unknown start.
	if got := FailedSince(false, false, zero, false, at(0)); !got.IsZero() {
		t.Errorf("first refresh: %v, want unknown (zero)", got)
	}
	// Answered, then did not: the run begins at this probe.
	run := FailedSince(true, true, zero, false, at(5))
	if !run.Equal(at(5)) {
		t.Errorf("first failed probe: %v", run)
	}
	// Still not answering: the run keeps its start.
	if got := FailedSince(true, false, run, false, at(10)); !got.Equal(at(5)) {
		t.Errorf("second failed probe: %v, want the run's start", got)
	}
	// A run of unknown start stays unknown.
	if got := FailedSince(true, false, zero, false, at(10)); !got.IsZero() {
		t.Errorf("unknown start became %v", got)
	}
	// Answers again: no run.
	if got := FailedSince(true, false, run, true, at(15)); !got.IsZero() {
		t.Errorf("answered again: %v", got)
	}

	// Evidence: the current run, or the run that just ended, never an older one.
	if got := Evidence(at(5), zero, false); !got.Equal(at(5)) {
		t.Errorf("current run: %v", got)
	}
	if got := Evidence(zero, at(5), false); !got.Equal(at(5)) {
		t.Errorf("confirmed in the refresh the node came back: %v, want the run that ended", got)
	}
	if got := Evidence(zero, zero, true); !got.IsZero() {
		t.Errorf("never failed: %v", got)
	}
}

func TestStepStartsWhereBeginSays(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	// "a" began at 2 s (a failed probe), "b" at this refresh.
	begins := map[string]Open{"a": {Since: at(2), StartSeen: true}, "b": {Since: at(5), StartSeen: true}, "c": {Since: at(1)}, "d": {Since: at(9), StartSeen: true}}
	begin := func(k string) Open { return begins[k] }
	open, _ := Step[string](nil, at(5), []string{"a", "b", "c", "d"}, begin)
	if !open["a"].Since.Equal(at(2)) || !open["b"].Since.Equal(at(5)) {
		t.Errorf("open %v, want a since 2 s and b since 5 s", open)
	}
	// An episode of unknown start is never dated back, and none begins after now.
	if !open["c"].Since.Equal(at(5)) || !open["d"].Since.Equal(at(5)) {
		t.Errorf("c %v, d %v: want both since 5 s", open["c"], open["d"])
	}
	// Carried episodes keep their start; begin is not asked again.
	open, ended := Step(open, at(10), []string{"a"}, func(string) Open { t.Fatal("begin called for a carried episode"); return Open{} })
	if !open["a"].Since.Equal(at(2)) || len(ended) != 3 {
		t.Errorf("open %v ended %v", open, ended)
	}
}
