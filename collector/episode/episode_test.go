package episode

import (
	"testing"
	"time"
)

func TestObserveIsCumulativeAndCopies(t *testing.T) {
	var h *Histogram
	h1 := h.Observe(3 * time.Second)
	h2 := h1.Observe(2 * time.Hour)
	h3 := h2.Observe(500 * time.Millisecond)
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
	never := func(string) bool { return false }
	always := func(string) bool { return true }
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
