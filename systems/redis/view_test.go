package redis

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/collector/episode"
	"github.com/failover-exporter/failover_exporter/collector/watch"
	"github.com/failover-exporter/failover_exporter/status/model"
)

var viewT0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// failingOver: master A (slots 0-8191) is FAIL since 3 s ago and its
// replica D not yet promoted; B owns the rest.
func failingOver() *Snapshot {
	s := &Snapshot{ReadAt: viewT0.Add(40 * time.Second), SlotsOK: 8192, SlotsFail: 8192, Masters: 2, KnownNodes: 3, ViewsConsistent: true,
		Nodes: []Node{
			{ID: idA, Addr: "127.0.0.1:7000", Role: RoleMaster, State: NodeStateFail, Slots: 8192},
			{ID: idB, Addr: "127.0.0.1:7001", Role: RoleMaster, State: NodeStateOK, Slots: 8192, Reachable: true},
			{ID: idD, Addr: "127.0.0.1:7003", Role: RoleReplica, MasterID: idA, State: NodeStateOK, Reachable: true,
				HasReplicationLag: true, ReplicationLagBytes: 12},
		},
		SlotRanges: []SlotRange{{First: 0, Last: 8191, Owner: idA}, {First: 8192, Last: 16383, Owner: idB}},
	}
	s.Foreign = []ForeignNode{{ID: "ffffffff55555555555555555555555555555555", Addr: "127.0.0.1:7009", Reason: ForeignNotListed}}
	s.Episodes.Failovers = map[string]FailoverEpisode{idA: {Open: episode.Open{Since: viewT0.Add(37 * time.Second), StartSeen: true}}}
	s.Episodes.SlotsUnserved = &episode.Open{Since: viewT0.Add(37 * time.Second), StartSeen: true}
	return s
}

func viewOf(s *Snapshot, now time.Time) model.Cluster {
	return Views([]watch.Named[Snapshot]{{Name: "cache", State: &watch.State[Snapshot]{Snapshot: s, Up: true, LastSuccess: s.ReadAt, Refreshes: 9, Failures: 1}}}, now)[0]
}

func TestViews(t *testing.T) {
	c := viewOf(failingOver(), viewT0.Add(41*time.Second))
	if c.System != "redis" || c.Name != "cache" || c.Title != "Redis Cluster cache" {
		t.Errorf("part %+v, want redis cache", c)
	}
	if h := *c.Head; h != (model.Head{Up: true, HasData: true, LastOK: "1s ago", Refreshes: 9, Failures: 1}) {
		t.Errorf("head %+v", h)
	}
	if sum := summarize(failingOver()); sum.OpenFailover != "3s" || sum.OpenUnserved != "3s" || sum.Reachable != 2 || sum.SlotsFail != 8192 {
		t.Errorf("summary %+v", sum)
	}
	v := newClusterView(failingOver())
	// The master serving slots first, its replica under it, with its lag.
	if len(v.Shards) != 2 || v.Shards[0].Master.ID != idA || len(v.Shards[0].Replicas) != 1 ||
		v.Shards[0].Replicas[0] != (node{ID: idD, ShortID: idD[:8], Address: "127.0.0.1:7003", State: "ok", Reachable: true, Lag: "12 B", IsReplica: true}) {
		t.Errorf("shards %+v", v.Shards)
	}
	if len(v.Foreign) != 1 || v.Foreign[0] != (foreignNode{ShortID: "ffffffff", Address: "127.0.0.1:7009", Reason: "not_listed"}) {
		t.Errorf("foreign %+v", v.Foreign)
	}
	// Before the first snapshot: the head alone.
	empty := Views([]watch.Named[Snapshot]{{Name: "new", State: &watch.State[Snapshot]{LastError: fmt.Errorf("dial: refused")}}}, viewT0)[0]
	if empty.Head.HasData || empty.Head.LastError != "dial: refused" || len(empty.Stats) != 0 || len(empty.Tables) != 0 {
		t.Errorf("no snapshot yet: %+v %+v %+v", empty.Head, empty.Stats, empty.Tables)
	}
}

// TestViewsBoundTheMasters: at most maxMasters masters are listed, the
// rest counted, masters serving slots first.
func TestViewsBoundTheMasters(t *testing.T) {
	s := &Snapshot{ReadAt: viewT0}
	for i := range maxMasters + 20 {
		n := Node{ID: fmt.Sprintf("%040d", i), Addr: fmt.Sprintf("10.0.0.1:%d", 7000+i), Role: RoleMaster, State: NodeStateOK}
		if i >= 20 {
			n.Slots = 1
		}
		s.Nodes = append(s.Nodes, n)
	}
	v := newClusterView(s)
	if len(v.Shards) != maxMasters || v.ShardsMore != 20 {
		t.Errorf("%d masters listed and %d counted, want %d and 20", len(v.Shards), v.ShardsMore, maxMasters)
	}
	for i, sh := range v.Shards {
		if i < maxMasters-20 && sh.Master.Slots == 0 {
			t.Errorf("master %d without slots listed before one with slots", i)
			break
		}
	}
	if !strings.HasPrefix(v.Shards[0].Master.ShortID, "0000") {
		t.Errorf("short ID %q", v.Shards[0].Master.ShortID)
	}
}

// Alarm hues, in degrees: magenta-red through red to orange. The page
// keeps them for slots in trouble.
const alarmHueFrom, alarmHueTo = 320.0, 50.0

func inAlarmHues(hue float64) bool { return hue >= alarmHueFrom || hue <= alarmHueTo }

// hueOf parses a #rrggbb colour and returns its HSL hue in degrees and its
// saturation (0 to 1).
func hueOf(t *testing.T, c string) (hue, saturation float64) {
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
		color string
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
		c := slotColor(NodeStateOK, i)
		hue, sat := hueOf(t, c)
		if inAlarmHues(hue) || sat < 0.25 {
			t.Errorf("healthy master %d gets %s, hue %.0f°, saturation %.2f: want a clear hue outside %.0f°-%.0f°",
				i, c, hue, sat, alarmHueFrom, alarmHueTo)
		}
	}
	trouble := map[string]string{"unassigned": colorUnassigned}
	for _, state := range []NodeState{NodeStatePFail, NodeStateFail, NodeStateNoAddr, NodeStateHandshake} {
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

func rgbDistance(t *testing.T, a, b string) float64 {
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
	strip := func(s *Snapshot) []slotRun { return newClusterView(s).Strip }
	failing := strip(failingOver())
	if len(failing) != 2 || failing[0].Color != colorFail || failing[1].Color != healthyPalette[1] {
		t.Errorf("master A failing, B ok: strip %+v, want A %s and B %s", failing, colorFail, healthyPalette[1])
	}

	promoted := failingOver()
	promoted.Nodes[2].Role, promoted.Nodes[2].MasterID, promoted.Nodes[2].Slots = RoleMaster, "", 8192
	promoted.Nodes[0].Slots = 0
	promoted.SlotRanges[0].Owner = idD
	after := strip(promoted)
	if after[0].Color != healthyPalette[0] || after[1].Color != healthyPalette[1] {
		t.Errorf("after D's promotion: %s and %s, want %s and %s", after[0].Color, after[1].Color, healthyPalette[0], healthyPalette[1])
	}

	unassigned := failingOver()
	unassigned.SlotRanges[0].Owner = ""
	if got := strip(unassigned)[0]; got.State != "unassigned" || got.Color != colorUnassigned {
		t.Errorf("unassigned slots: %+v, want colour %s", got, colorUnassigned)
	}
}
