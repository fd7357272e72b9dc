package redis

import (
	"maps"
	"reflect"
	"testing"

	"github.com/failover-exporter/failover_exporter/systems/redis/proto"
)

const labClusterInfo = "cluster_state:ok\r\ncluster_slots_assigned:16384\r\ncluster_slots_ok:16384\r\n" +
	"cluster_slots_pfail:0\r\ncluster_slots_fail:0\r\ncluster_known_nodes:6\r\ncluster_size:3\r\n" +
	"cluster_current_epoch:6\r\ncluster_my_epoch:1\r\ncluster_stats_messages_ping_sent:21\r\n" +
	"total_cluster_links_buffer_limit_exceeded:0\r\n"

const labMasterReplication = "# Replication\r\nrole:master\r\nconnected_slaves:2\r\n" +
	"slave0:ip=127.0.0.1,port=17103,state=online,offset=1000,lag=0\r\n" +
	"slave1:ip=::1,port=17106,state=wait_bgsave,offset=0,lag=3\r\n" +
	"master_failover_state:no-failover\r\nmaster_replid:24d8d8a0f1862ffd06f5ba41e3ce2bdeeaa5ea95\r\n" +
	"master_repl_offset:1042\r\nsecond_repl_offset:-1\r\n"

const labReplicaReplication = "# Replication\r\nrole:slave\r\nmaster_host:127.0.0.1\r\nmaster_port:17100\r\n" +
	"master_link_status:up\r\nmaster_last_io_seconds_ago:1\r\nmaster_sync_in_progress:0\r\n" +
	"slave_repl_offset:1042\r\nconnected_slaves:0\r\nmaster_repl_offset:1042\r\n"

func TestParseReplicationInfo(t *testing.T) {
	fields, err := redisproto.ParseInfoFields("txt:" + labMasterReplication)
	if err != nil {
		t.Fatal(err)
	}
	got, err := parseReplicationInfo(fields)
	if err != nil {
		t.Fatal(err)
	}
	want := replicationInfo{
		IsMaster:         true,
		MasterReplOffset: 1042,
		Replicas: []replicaOffset{
			{Addr: "127.0.0.1:17103", Offset: 1000},
			{Addr: "[::1]:17106", Offset: 0},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("master: got %+v, want %+v", got, want)
	}

	fields, err = redisproto.ParseInfoFields(labReplicaReplication)
	if err != nil {
		t.Fatal(err)
	}
	got, err = parseReplicationInfo(fields)
	if err != nil {
		t.Fatal(err)
	}
	if want := (replicationInfo{MasterLinkUp: true, MasterReplOffset: 1042}); !reflect.DeepEqual(got, want) {
		t.Errorf("replica: got %+v, want %+v", got, want)
	}

	for name, bad := range map[string]string{
		"unknown role":       "role:sentinel\nmaster_repl_offset:0\n",
		"no offset":          "role:master\nconnected_slaves:0\n",
		"missing slave line": "role:master\nconnected_slaves:1\nmaster_repl_offset:0\n",
		"bad slave line":     "role:master\nconnected_slaves:1\nslave0:ip=1.2.3.4\nmaster_repl_offset:0\n",
		"bad slave offset":   "role:master\nconnected_slaves:1\nslave0:ip=1.2.3.4,port=1,offset=x\nmaster_repl_offset:0\n",
		"slave not kv":       "role:master\nconnected_slaves:1\nslave0:ip\nmaster_repl_offset:0\n",
	} {
		fields, err := redisproto.ParseInfoFields(bad)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := parseReplicationInfo(fields); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
}

// A replica line whose state or lag this parser does not understand still
// gives the replica's offset: neither is used.
func TestParseReplicationInfoIgnoresUnusedFields(t *testing.T) {
	fields, err := redisproto.ParseInfoFields("role:master\nconnected_slaves:1\nslave0:ip=1.2.3.4,port=1,state=new-state,offset=5,lag=x\nmaster_repl_offset:9\n")
	if err != nil {
		t.Fatal(err)
	}
	got, err := parseReplicationInfo(fields)
	want := replicationInfo{IsMaster: true, MasterReplOffset: 9, Replicas: []replicaOffset{{Addr: "1.2.3.4:1", Offset: 5}}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, %v; want %+v", got, err, want)
	}
}

func TestParseUsedMemory(t *testing.T) {
	fields, err := redisproto.ParseInfoFields("txt:# Memory\r\nused_memory:1954360\r\nused_memory_human:1.86M\r\n")
	if err != nil {
		t.Fatal(err)
	}
	used, err := parseUsedMemory(fields)
	if err != nil || used != 1954360 {
		t.Errorf("got %d, %v; want 1954360", used, err)
	}
	if _, err := parseUsedMemory(redisproto.InfoFields("")); err == nil {
		t.Error("missing used_memory: want an error")
	}
}

func TestParseNodeView(t *testing.T) {
	v, err := parseNodeView("127.0.0.1:17100", "txt:"+labClusterNodes, "txt:"+labClusterInfo,
		"txt:"+labMasterReplication, "txt:used_memory:100\r\n", 7)
	if err != nil {
		t.Fatal(err)
	}
	if v.Self().ID != idA || v.Keys != 7 || v.UsedMemory != 100 || !v.Replication.IsMaster || v.Info != (redisproto.ClusterInfo{StateOK: true, CurrentEpoch: 6}) {
		t.Errorf("unexpected view %+v", v)
	}
	noSelf := idB + " 127.0.0.1:17101@27101 master - 0 0 2 connected 0-16383"
	if _, err := parseNodeView("x:1", noSelf, labClusterInfo, labMasterReplication, "used_memory:1", 0); err == nil {
		t.Error("CLUSTER NODES without myself: want an error")
	}
}

func FuzzParseInfo(f *testing.F) {
	f.Add(labClusterInfo)
	f.Add("txt:" + labMasterReplication)
	f.Add(labReplicaReplication)
	f.Add("# Memory\r\nused_memory:1\r\n")
	f.Add("role:master\nconnected_slaves:1\nslave0:ip=1.2.3.4,port=1,state=online,offset=5,lag=0\nmaster_repl_offset:9\n")
	f.Fuzz(func(t *testing.T, reply string) {
		fields, err := redisproto.ParseInfoFields(reply)
		if err != nil {
			return
		}
		if ri, err := parseReplicationInfo(fields); err == nil && ri.IsMaster {
			for _, r := range ri.Replicas {
				if r.Addr == "" {
					t.Errorf("accepted replica without address: %+v", r)
				}
			}
		}
		_, _ = parseUsedMemory(fields)
		_, _ = redisproto.ParseClusterInfo(reply)
	})
}

// INFO errorstats: the redirect kinds counted, others ignored, a kind never
// replied 0; a server without the section (an empty reply) is not read,
// and a malformed count is an error, never a 0.
func TestParseErrorStats(t *testing.T) {
	got, read, err := parseErrorStats("# Errorstats\r\nerrorstat_ERR:count=4\r\nerrorstat_MOVED:count=12\r\nerrorstat_READONLY:count=3\r\nerrorstat_WRONGTYPE:count=1\r\n")
	want := map[string]uint64{"MOVED": 12, "ASK": 0, "TRYAGAIN": 0, "CLUSTERDOWN": 0, "READONLY": 3}
	if err != nil || !read || !maps.Equal(got, want) {
		t.Errorf("got %v, %v, %v; want %v", got, read, err, want)
	}
	if got, read, err := parseErrorStats("# Errorstats\r\n"); err != nil || !read || got["MOVED"] != 0 || len(got) != len(RedirectErrors) {
		t.Errorf("no error yet: got %v, %v, %v; want every kind 0", got, read, err)
	}
	if got, read, err := parseErrorStats(""); err != nil || read || got != nil {
		t.Errorf("no section: got %v, %v, %v; want not read", got, read, err)
	}
	for _, bad := range []string{"# Errorstats\r\nerrorstat_MOVED:12\r\n", "# Errorstats\r\nerrorstat_MOVED:count=-1\r\n", "# Errorstats\r\nnot a field\r\n"} {
		if got, read, err := parseErrorStats(bad); err == nil || read {
			t.Errorf("%q: got %v, %v, no error", bad, got, read)
		}
	}
}

// The backlog: a replica resumes when the offset after the one it
// acknowledged is in [first byte, first byte + history], as Redis decides;
// a server without the fields leaves it unread, never read as empty.
func TestReplicationBacklog(t *testing.T) {
	fields, err := redisproto.ParseInfoFields("role:master\r\nmaster_repl_offset:5000\r\nrepl_backlog_active:1\r\nrepl_backlog_size:1048576\r\nrepl_backlog_first_byte_offset:1001\r\nrepl_backlog_histlen:4000\r\n")
	if err != nil {
		t.Fatal(err)
	}
	b, ok := parseBacklog(fields)
	if !ok || b != (replicationBacklog{Active: true, Size: 1048576, FirstByte: 1001, History: 4000}) {
		t.Fatalf("parsed %+v %v", b, ok)
	}
	for offset, want := range map[int64]bool{999: false, 1000: true, 4000: true, 5000: true, 5001: false} {
		if got := b.resumes(offset); got != want {
			t.Errorf("acknowledged %d: resumes %v, want %v", offset, got, want)
		}
	}
	if (replicationBacklog{FirstByte: 1, History: 10}).resumes(5) {
		t.Errorf("an inactive backlog resumes nothing")
	}
	fields, _ = redisproto.ParseInfoFields("role:master\r\nmaster_repl_offset:5000\r\n")
	if _, ok := parseBacklog(fields); ok {
		t.Errorf("no repl_backlog fields read as a backlog")
	}
}

// A replica's sync: the bytes while it runs (a diskless sync's unknown
// total, -1, kept as 0), nothing otherwise.
func TestParseReplicaSync(t *testing.T) {
	for _, c := range []struct {
		text string
		want replicaSync
	}{
		{"role:slave\r\nmaster_link_status:down\r\nmaster_sync_in_progress:1\r\nmaster_sync_total_bytes:4000\r\nmaster_sync_read_bytes:1000\r\nmaster_sync_left_bytes:3000\r\nmaster_repl_offset:0\r\n",
			replicaSync{InProgress: true, ReadBytes: 1000, TotalBytes: 4000}},
		{"role:slave\r\nmaster_link_status:down\r\nmaster_sync_in_progress:1\r\nmaster_sync_total_bytes:-1\r\nmaster_sync_read_bytes:52\r\nmaster_repl_offset:0\r\n",
			replicaSync{InProgress: true, ReadBytes: 52}},
		{"role:slave\r\nmaster_link_status:up\r\nmaster_sync_in_progress:0\r\nmaster_repl_offset:10\r\n", replicaSync{}},
	} {
		fields, err := redisproto.ParseInfoFields(c.text)
		if err != nil {
			t.Fatal(err)
		}
		ri, err := parseReplicationInfo(fields)
		if err != nil || ri.Sync != c.want {
			t.Errorf("%q: got %+v, %v; want %+v", c.text, ri.Sync, err, c.want)
		}
	}
}

func TestParseSyncStats(t *testing.T) {
	got, err := parseSyncStats("# Stats\r\ntotal_connections_received:9\r\nsync_full:3\r\nsync_partial_ok:7\r\nsync_partial_err:2\r\nexpired_keys:0\r\n")
	if want := (SyncCounts{Full: 3, PartialOK: 7, PartialErr: 2}); err != nil || got != want {
		t.Errorf("got %+v, %v; want %+v", got, err, want)
	}
	for _, bad := range []string{"# Stats\r\nsync_full:3\r\nsync_partial_ok:7\r\n", "# Stats\r\nsync_full:x\r\nsync_partial_ok:7\r\nsync_partial_err:2\r\n", ""} {
		if got, err := parseSyncStats(bad); err == nil {
			t.Errorf("%q: got %+v, no error", bad, got)
		}
	}
}
