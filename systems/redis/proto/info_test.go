package redisproto

import "testing"

const labClusterInfo = "cluster_state:ok\r\ncluster_slots_assigned:16384\r\ncluster_slots_ok:16384\r\n" +
	"cluster_slots_pfail:0\r\ncluster_slots_fail:0\r\ncluster_known_nodes:6\r\ncluster_size:3\r\n" +
	"cluster_current_epoch:6\r\ncluster_my_epoch:1\r\ncluster_stats_messages_ping_sent:21\r\n" +
	"total_cluster_links_buffer_limit_exceeded:0\r\n"

func TestStripVerbatimPrefix(t *testing.T) {
	tests := map[string]string{
		"txt:cluster_state:ok": "cluster_state:ok",
		"mkd:# Title":          "# Title",
		"cluster_state:ok":     "cluster_state:ok",
		"# Replication\r\n":    "# Replication\r\n",
		"TXT:x":                "TXT:x",
		"tx:":                  "tx:",
		"":                     "",
		"txt:":                 "",
	}
	for in, want := range tests {
		if got := StripVerbatim(in); got != want {
			t.Errorf("StripVerbatim(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseClusterInfo(t *testing.T) {
	want := ClusterInfo{
		StateOK: true, CurrentEpoch: 6,
	}
	for _, reply := range []string{labClusterInfo, "txt:" + labClusterInfo} {
		got, err := ParseClusterInfo(reply)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("got %+v, want %+v", got, want)
		}
	}

	failing := "cluster_state:fail\ncluster_slots_assigned:16384\ncluster_slots_ok:10923\ncluster_slots_pfail:0\n" +
		"cluster_slots_fail:5461\ncluster_known_nodes:3\ncluster_size:3\ncluster_current_epoch:3\ncluster_my_epoch:2\n"
	got, err := ParseClusterInfo(failing)
	if err != nil {
		t.Fatal(err)
	}
	if want := (ClusterInfo{StateOK: false, CurrentEpoch: 3}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}

	// Fields the exporter does not use are not checked.
	unused := "cluster_state:ok\ncluster_slots_assigned:x\ncluster_current_epoch:4\n"
	if got, err := ParseClusterInfo(unused); err != nil || got != (ClusterInfo{StateOK: true, CurrentEpoch: 4}) {
		t.Errorf("with a bad unused field: got %+v, %v", got, err)
	}

	for name, bad := range map[string]string{
		"empty":          "",
		"unknown state":  "cluster_state:maybe\n",
		"missing fields": "cluster_state:ok\n",
		"not key:value":  "cluster_state:ok\ngarbage\n",
		"bad number":     "cluster_state:ok\ncluster_current_epoch:x\n",
	} {
		if _, err := ParseClusterInfo(bad); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
}
