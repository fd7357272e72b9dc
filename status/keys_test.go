package status

import (
	"strings"
	"testing"

	"github.com/failover-exporter/failover_exporter/systems/redis"
)

// The slot map is shaded by keys once some master's hot slots were read
// (slot_stats), with a table of the hottest; without them the page shows
// neither. Master B holds 1,000 keys: 900 in slot 9000, and 100 shared by
// its other 8191 slots, so slot 9000's band of 128 holds about 902.
func TestPageShadesTheSlotMapByKeys(t *testing.T) {
	_, plain := render(t, testPage(kafkaWithDeadBroker(1, 1), redisFailingOver(), nil), "/")
	if strings.Contains(plain, "Keys by slot") || strings.Contains(plain, "data-keys=") {
		t.Error("a key map without slot stats")
	}
	r := redisFailingOver()
	r.Nodes[1].Keys = 1000
	r.Nodes[1].SlotStats = &redis.SlotStats{ByKeys: []redis.SlotStat{{Slot: 9000, Keys: 900}}}
	code, body := render(t, testPage(kafkaWithDeadBroker(1, 1), r, nil), "/")
	if code != 200 {
		t.Fatalf("status %d", code)
	}
	for _, want := range []string{
		"<h3>Keys by slot</h3>",
		`title="slots 8960-9087: about 902 keys; hottest slot 9000 with 900" data-first="8960" data-last="9087" data-keys="902"`,
		`<tr data-slot="9000"><td class="num">9000</td><td class="num">900</td><td>127.0.0.1:7001</td></tr>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if n := strings.Count(body, "data-keys="); n != 128 {
		t.Errorf("%d key bands, want 128", n)
	}
	// Without usage counters the table has no CPU or network columns.
	if strings.Contains(body, "<th>CPU</th>") {
		t.Error("CPU column without usage counters")
	}
}
