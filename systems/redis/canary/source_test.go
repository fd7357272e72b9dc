package rediscanary

import (
	"fmt"
	"strings"
	"testing"

	redisproto "github.com/failover-exporter/failover_exporter/systems/redis/proto"
)

// Node ids, 40 hex digits as Redis gives them.
var (
	idA = strings.Repeat("a", 40)
	idB = strings.Repeat("b", 40)
	idC = strings.Repeat("c", 40)
	idD = strings.Repeat("d", 40)
	idE = strings.Repeat("e", 40)
)

// slotMap merges CLUSTER NODES replies, by the address that gave them, as
// topology does.
func slotMap(t *testing.T, replies map[string]string) *redisproto.SlotMap {
	t.Helper()
	var views []redisproto.View
	for addr, nodes := range replies {
		v, err := redisproto.ParseView(addr, nodes, "cluster_state:ok\r\ncluster_current_epoch:5\r\n")
		if err != nil {
			t.Fatal(err)
		}
		views = append(views, v)
	}
	slots, err := redisproto.NewSlotMap(views)
	if err != nil {
		t.Fatal(err)
	}
	return slots
}

// The canary names a slot's owner by the watcher's rule: the claim with the
// highest config epoch, from members only. A node that a majority of the
// slot-serving masters does not list (here one after CLUSTER RESET that
// claims slot 0 with a higher epoch) is not an owner, whatever it claims.
func TestTopologyRuleIsTheWatchers(t *testing.T) {
	var (
		a = idA + " 127.0.0.1:7000@17000 %smaster - 0 0 1 connected 0-5460\n"
		b = idB + " 127.0.0.1:7001@17001 %smaster - 0 0 2 connected 5461-10922\n"
		c = idC + " 127.0.0.1:7002@17002 %smaster%s - 0 0 3 connected 10923-16383\n"
		// D, C's replica, was promoted with epoch 4; only B has heard.
		d     = idD + " 127.0.0.1:7003@17003 %s %s 0 0 4 connected%s\n"
		reset = idE + " 127.0.0.1:7004@17004 myself,master - 0 0 9 connected 0\n"
	)
	f := fmt.Sprintf
	slots := slotMap(t, map[string]string{
		"127.0.0.1:7000": f(a, "myself,") + f(b, "") + f(c, "", "") + f(d, "slave", idC, ""),
		"127.0.0.1:7001": f(a, "") + f(b, "myself,") + f(c, "", ",fail") + f(d, "master", "-", " 10923-16383"),
		"127.0.0.1:7004": reset,
	})
	for slot, want := range map[int]redisproto.Master{
		0:     {ID: idA, Addr: "127.0.0.1:7000"},
		5461:  {ID: idB, Addr: "127.0.0.1:7001"},
		10923: {ID: idD, Addr: "127.0.0.1:7003"},
		16383: {ID: idD, Addr: "127.0.0.1:7003"},
	} {
		if got, ok := slots.Owner(slot); !ok || got != want {
			t.Errorf("slot %d: owner %+v, %v; want %+v", slot, got, ok, want)
		}
	}
	if got := slots.Masters(); len(got) != 3 || got[0].ID != idA || got[1].ID != idB || got[2].ID != idD {
		t.Errorf("masters %+v, want A, B, D", got)
	}
}
