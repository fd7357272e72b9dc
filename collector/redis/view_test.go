package status

import (
	"html/template"
	"math"
	"strconv"
	"testing"

	"github.com/failover-exporter/failover_exporter/collector/redis"
	"github.com/failover-exporter/failover_exporter/collector/watch"
)

// Alarm hues, in degrees: magenta-red through red to orange. The page
// keeps them for slots in trouble.
const alarmHueFrom, alarmHueTo = 320.0, 50.0

func inAlarmHues(hue float64) bool { return hue >= alarmHueFrom || hue <= alarmHueTo }

// hueOf parses a #rrggbb colour and returns its HSL hue in degrees and its
// saturation (0 to 1).
func hueOf(t *testing.T, c template.CSS) (hue, saturation float64) {
	t.Helper()
	s := string(c)
	if len(s) != 7 || s[0] != '#' {
		t.Fatalf("colour %q is not #rrggbb", s)
	}
	var rgb [3]float64
	for i := range rgb {
		v, err := strconv.ParseUint(s[1+2*i:3+2*i], 16, 8)
		if err != nil {
			t.Fatalf("colour %q: %v", s, err)
		}
		rgb[i] = float64(v) / 255
	}
	r, g, b := rgb[0], rgb[1], rgb[2]
	hi, lo := max(r, g, b), min(r, g, b)
	chroma := hi - lo
	if chroma == 0 {
		return 0, 0
	}
	switch hi {
	case r:
		hue = math.Mod((g-b)/chroma+6, 6)
	case g:
		hue = (b-r)/chroma + 2
	default:
		hue = (r-g)/chroma + 4
	}
	lightness := (hi + lo) / 2
	return hue * 60, chroma / (1 - math.Abs(2*lightness-1))
}

func TestHueOf(t *testing.T) {
	for _, c := range []struct {
		color template.CSS
		hue   float64
	}{{"#ff0000", 0}, {"#ff8000", 30.1}, {"#00ff00", 120}, {"#0000ff", 240}, {"#ff00ff", 300}, {"#ff0040", 344.9}} {
		if h, _ := hueOf(t, c.color); math.Abs(h-c.hue) > 0.1 {
			t.Errorf("hue of %s: %.1f, want %.1f", c.color, h, c.hue)
		}
	}
	if _, s := hueOf(t, "#888888"); s != 0 {
		t.Errorf("a grey has saturation %.2f, want 0", s)
	}
}

// TestSlotColours: a healthy master's colour never reads as an alarm, and
// slots in trouble always do.
func TestSlotColours(t *testing.T) {
	// Every colour a healthy master can get, whatever its place.
	for i := range 3 * len(healthyPalette) {
		c := slotColor(redis.NodeStateOK, i)
		hue, sat := hueOf(t, c)
		if inAlarmHues(hue) || sat < 0.25 {
			t.Errorf("healthy master %d gets %s, hue %.0f°, saturation %.2f: want a clear hue outside %.0f°-%.0f°",
				i, c, hue, sat, alarmHueFrom, alarmHueTo)
		}
	}
	trouble := map[string]template.CSS{"unassigned": colorUnassigned}
	for _, state := range []redis.NodeState{redis.NodeStatePFail, redis.NodeStateFail, redis.NodeStateNoAddr, redis.NodeStateHandshake} {
		trouble[string(state)] = slotColor(state, 0)
	}
	for state, c := range trouble {
		if hue, sat := hueOf(t, c); !inAlarmHues(hue) || sat < 0.5 {
			t.Errorf("%s slots are %s, hue %.0f°, saturation %.2f: want a saturated hue in %.0f°-%.0f°",
				state, c, hue, sat, alarmHueFrom, alarmHueTo)
		}
	}
	// Masters stay distinguishable: no two palette colours close.
	for i, a := range healthyPalette {
		for _, b := range healthyPalette[i+1:] {
			if d := rgbDistance(t, a, b); d < 40 {
				t.Errorf("healthy colours %s and %s are %.0f apart in RGB, want at least 40", a, b, d)
			}
		}
	}
}

func rgbDistance(t *testing.T, a, b template.CSS) float64 {
	t.Helper()
	var sum float64
	for i := 1; i < 7; i += 2 {
		x, errX := strconv.ParseUint(string(a)[i:i+2], 16, 8)
		y, errY := strconv.ParseUint(string(b)[i:i+2], 16, 8)
		if errX != nil || errY != nil {
			t.Fatalf("colours %q, %q are not #rrggbb", a, b)
		}
		sum += (float64(x) - float64(y)) * (float64(x) - float64(y))
	}
	return math.Sqrt(sum)
}

// TestSlotMapColours: in the slot map, failing slots are red, healthy
// masters get distinct palette colours in slot order, and a promoted replica
// takes the colour of the master whose slots it took over.
func TestSlotMapColours(t *testing.T) {
	strip := func(s *redis.Snapshot) []slotRun {
		return redisViewOf(watch.Named[redis.Snapshot]{Name: "cache", State: &watch.State[redis.Snapshot]{Snapshot: s, Up: true}}, nil, t0).Strip
	}
	failing := strip(redisFailingOver())
	if len(failing) != 2 || failing[0].Color != colorFail || failing[1].Color != healthyPalette[1] {
		t.Errorf("master A failing, B ok: strip %+v, want A %s and B %s", failing, colorFail, healthyPalette[1])
	}

	promoted := redisFailingOver()
	promoted.Nodes[2].Role, promoted.Nodes[2].MasterID, promoted.Nodes[2].Slots = redis.RoleMaster, "", 8192
	promoted.Nodes[0].Slots = 0
	promoted.SlotRanges[0].Owner = idD
	after := strip(promoted)
	if after[0].Color != healthyPalette[0] || after[1].Color != healthyPalette[1] {
		t.Errorf("after D's promotion: %s and %s, want %s and %s", after[0].Color, after[1].Color, healthyPalette[0], healthyPalette[1])
	}

	unassigned := redisFailingOver()
	unassigned.SlotRanges[0].Owner = ""
	if got := strip(unassigned)[0]; got.State != "unassigned" || got.Color != colorUnassigned {
		t.Errorf("unassigned slots: %+v, want colour %s", got, colorUnassigned)
	}
}
