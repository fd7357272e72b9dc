package redisproto

import (
	"reflect"
	"strings"
	"testing"
)

const (
	idA = "099acb3ad33355bfc624e555c95f92f2c4c98dbe"
	idB = "a5d1837466ddee36fb8f66a06a54c9d80ece254f"
	idC = "a3a44f32f965c0b821ece5fb05e48e6695547d1c"
	idD = "c096849e540e19e62780faa5bf76a837fe1752f6"
	idE = "40b05f86ee6521480c7d10fefca3163a70a1e6c3"
	idF = "cc660dd30cdd54844f77e2d0729abf88c029c93b"
)

// labClusterNodes is a real reply of a 3+3 lab cluster (Redis 7.0), seen from
// the node on port 17100 while it migrates slot 100.
const labClusterNodes = idD + ` 127.0.0.1:17103@27103 slave ` + idA + ` 0 1795986153169 1 connected
` + idB + ` 127.0.0.1:17101@27101 master - 0 1795986153169 2 connected 5461-10922
` + idF + ` 127.0.0.1:17105@27105 slave ` + idC + ` 0 1795986153068 3 connected
` + idC + ` 127.0.0.1:17102@27102 master - 0 1795986153068 3 connected 10923-16383
` + idE + ` 127.0.0.1:17104@27104 slave ` + idB + ` 0 1795986153068 2 connected
` + idA + ` 127.0.0.1:17100@27100 myself,master - 0 1795986152000 1 connected 0-5460 [100->-` + idB + `]
`

func TestParseClusterNodes(t *testing.T) {
	tests := []struct {
		name  string
		reply string
		want  []NodeLine
	}{
		{
			name:  "master with slot ranges and a migrating slot",
			reply: idA + " 127.0.0.1:17100@27100 myself,master - 0 1795986152000 1 connected 0-5460 7000 [100->-" + idB + "]\n",
			want: []NodeLine{{
				ID: idA, Addr: "127.0.0.1:17100",
				Flags: NodeFlags{Myself: true, Master: true}, ConfigEpoch: 1,
				LinkConnected: true, Slots: []SlotRange{{0, 5460}, {7000, 7000}},
				Migrating: []SlotMove{{100, idB}},
			}},
		},
		{
			name:  "importing slot",
			reply: idB + " 127.0.0.1:17101@27101 myself,master - 0 0 2 connected 5461-10922 [100-<-" + idA + "]",
			want: []NodeLine{{
				ID: idB, Addr: "127.0.0.1:17101",
				Flags: NodeFlags{Myself: true, Master: true}, ConfigEpoch: 2, LinkConnected: true,
				Slots: []SlotRange{{5461, 10922}}, Importing: []SlotMove{{100, idA}},
			}},
		},
		{
			name:  "failed replica with hostname, disconnected",
			reply: idD + " 10.0.0.4:6379@16379,redis-4.example slave,fail " + idA + " 1700000000000 1699999999000 7 disconnected",
			want: []NodeLine{{
				ID: idD, Addr: "10.0.0.4:6379",
				Flags: NodeFlags{Replica: true, Fail: true}, MasterID: idA, ConfigEpoch: 7,
			}},
		},
		{
			name:  "hostname with auxiliary fields, pfail, nofailover",
			reply: idE + " 10.0.0.5:6379@16379,redis-5,shard-id=abc master,fail?,nofailover - 0 0 3 connected",
			want: []NodeLine{{
				ID: idE, Addr: "10.0.0.5:6379",
				Flags: NodeFlags{Master: true, PFail: true}, ConfigEpoch: 3, LinkConnected: true,
			}},
		},
		{
			name:  "noaddr node",
			reply: idF + " :0@0 master,noaddr - 1700000000000 1700000000000 0 disconnected",
			want: []NodeLine{{
				ID:    idF,
				Flags: NodeFlags{Master: true, NoAddr: true},
			}},
		},
		{
			name:  "handshake, noflags and unknown flags",
			reply: idC + " 127.0.0.1:7005@17005 handshake,noflags,future - 0 0 0 connected",
			want: []NodeLine{{
				ID: idC, Addr: "127.0.0.1:7005",
				Flags: NodeFlags{Handshake: true}, LinkConnected: true,
			}},
		},
		{
			name:  "IPv6 address",
			reply: idA + " ::1:7000@17000 myself,master - 0 0 1 connected",
			want: []NodeLine{{
				ID: idA, Addr: "[::1]:7000",
				Flags: NodeFlags{Myself: true, Master: true}, ConfigEpoch: 1, LinkConnected: true,
			}},
		},
		{
			name:  "RESP3 verbatim prefix and CRLF",
			reply: "txt:" + idA + " 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-16383\r\n",
			want: []NodeLine{{
				ID: idA, Addr: "127.0.0.1:7000",
				Flags: NodeFlags{Myself: true, Master: true}, ConfigEpoch: 1, LinkConnected: true,
				Slots: []SlotRange{{0, 16383}},
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseClusterNodes(tt.reply)
			if err != nil {
				t.Fatalf("parseClusterNodes: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

func TestParseClusterNodesLab(t *testing.T) {
	lines, err := ParseClusterNodes(labClusterNodes)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 6 {
		t.Fatalf("got %d lines, want 6", len(lines))
	}
	slots, replicas := 0, 0
	for _, l := range lines {
		slots += l.SlotCount()
		if l.Flags.Replica {
			replicas++
		}
	}
	if slots != SlotCount || replicas != 3 {
		t.Errorf("slots %d replicas %d, want %d and 3", slots, replicas, SlotCount)
	}
}

func TestParseClusterNodesErrors(t *testing.T) {
	good := idA + " 127.0.0.1:7000@17000 myself,master - 0 0 1 connected"
	tests := map[string]string{
		"empty":               "",
		"only blank lines":    "\n\n  \n",
		"too few fields":      idA + " 127.0.0.1:7000@17000 master - 0 0 1",
		"short id":            "abc 127.0.0.1:7000@17000 master - 0 0 1 connected",
		"uppercase id":        strings.ToUpper(idA) + " 127.0.0.1:7000@17000 master - 0 0 1 connected",
		"bad master id":       idA + " 127.0.0.1:7000@17000 slave xyz 0 0 1 connected",
		"no port":             idA + " 127.0.0.1@17000 master - 0 0 1 connected",
		"port out of range":   idA + " 127.0.0.1:70000@17000 master - 0 0 1 connected",
		"negative epoch":      idA + " 127.0.0.1:7000@17000 master - 0 0 -1 connected",
		"bad link state":      idA + " 127.0.0.1:7000@17000 master - 0 0 1 linked",
		"slot out of range":   good + " 16384",
		"negative slot":       good + " -1",
		"backwards range":     good + " 10-5",
		"bad range end":       good + " 10-x",
		"bad move":            good + " [100>>" + idB + "]",
		"unterminated move":   good + " [100->-" + idB,
		"move bad id":         good + " [100->-nothex]",
		"move bad slot":       good + " [99999-<-" + idB + "]",
		"node listed twice":   good + "\n" + good,
		"garbage after reply": good + "\nnot a node line",
	}
	for name, reply := range tests {
		t.Run(name, func(t *testing.T) {
			if lines, err := ParseClusterNodes(reply); err == nil {
				t.Errorf("want an error, got %+v", lines)
			}
		})
	}
}

// Fields the exporter does not use (bus port, hostname, ping-sent,
// pong-recv) are not checked: a value there that this parser does not
// understand must not fail the node's whole view.
func TestParseClusterNodesIgnoresUnusedFields(t *testing.T) {
	want := []NodeLine{{ID: idA, Addr: "127.0.0.1:7000", Flags: NodeFlags{Master: true}, ConfigEpoch: 1, LinkConnected: true}}
	for name, reply := range map[string]string{
		"no bus port (Redis before 4.0)": idA + " 127.0.0.1:7000 master - 0 0 1 connected",
		"bad bus port":                   idA + " 127.0.0.1:7000@x master - 0 0 1 connected",
		"bad ping":                       idA + " 127.0.0.1:7000@17000 master - x 0 1 connected",
		"bad pong":                       idA + " 127.0.0.1:7000@17000 master - 0 x 1 connected",
	} {
		got, err := ParseClusterNodes(reply)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %+v, want %+v", name, got, want)
		}
	}
}

func FuzzParseClusterNodes(f *testing.F) {
	f.Add(labClusterNodes)
	f.Add("txt:" + labClusterNodes)
	f.Add(idA + " :0@0 master,noaddr - 0 0 0 disconnected")
	f.Add(idA + " 10.0.0.4:6379@16379,host,aux=1 slave,fail " + idB + " 1 2 3 connected")
	f.Add(idA + " 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-5 7 [8->-" + idB + "] [9-<-" + idC + "]")
	f.Fuzz(func(t *testing.T, reply string) {
		lines, err := ParseClusterNodes(reply)
		if err != nil {
			return
		}
		for _, l := range lines {
			if !validNodeID(l.ID) {
				t.Errorf("accepted invalid id %q", l.ID)
			}
			for _, r := range l.Slots {
				if r.First < 0 || r.Last >= SlotCount || r.First > r.Last {
					t.Errorf("accepted bad slot range %+v", r)
				}
			}
			for _, m := range append(l.Migrating, l.Importing...) {
				if m.Slot < 0 || m.Slot >= SlotCount || !validNodeID(m.NodeID) {
					t.Errorf("accepted bad slot move %+v", m)
				}
			}
		}
		// Whatever parses must merge without panicking.
		_, _ = Merge([]View{{Addr: "127.0.0.1:1", Nodes: lines}})
	})
}
