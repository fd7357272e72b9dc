package redis

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/failover-exporter/failover_exporter/systems/redis/proto"
)

// replicaOffset is one slaveN line of a master's INFO replication; its
// state and lag are not used, so they are not read.
type replicaOffset struct {
	Addr   string // ip:port the replica announced
	Offset int64  // replication offset the replica acknowledged
}

// replicationInfo is the part of INFO replication the exporter uses.
type replicationInfo struct {
	IsMaster bool
	// On a master: its offset and its replicas' acknowledged offsets.
	MasterReplOffset int64
	Replicas         []replicaOffset
	// On a replica: whether its link to the master is up.
	MasterLinkUp bool
	// On a replica: whether a full sync from its master is in progress
	// (master_sync_in_progress: from the start of the RDB's transfer until
	// it is loaded), the bytes read and the total, 0 when the master did
	// not announce it (a diskless sync streams the RDB).
	Sync replicaSync
	// On a master: its replication backlog (repl_backlog_*), from which a
	// replica that reconnects resumes (PSYNC) when the offset it asks for
	// is still in it; a full sync of the whole data set otherwise.
	// Backlog.Active is false while the master has none (no replica since
	// its start).
	Backlog     replicationBacklog
	BacklogRead bool
}

// replicationBacklog is a master's repl_backlog_* fields.
type replicationBacklog struct {
	Active    bool
	Size      int64 // repl_backlog_size: what it can hold
	FirstByte int64 // repl_backlog_first_byte_offset
	History   int64 // repl_backlog_histlen: what it holds
}

// resumes reports whether a replica that acknowledged offset could resume
// from the backlog now, as Redis decides it (masterTryPartialResynchronization):
// the offset it asks for, one past what it has, must be in the backlog.
func (b replicationBacklog) resumes(offset int64) bool {
	next := offset + 1
	return b.Active && next >= b.FirstByte && next <= b.FirstByte+b.History
}

// replicaSync is a replica's master_sync_* fields.
type replicaSync struct {
	InProgress bool
	ReadBytes  int64
	TotalBytes int64
}

// progress describes a sync in progress: "in a full sync, N of M bytes
// read", without the total when the master announced none.
func (s replicaSync) progress() string {
	if s.TotalBytes > 0 {
		return fmt.Sprintf("in a full sync, %d of %d bytes read", s.ReadBytes, s.TotalBytes)
	}
	return fmt.Sprintf("in a full sync, %d bytes read", s.ReadBytes)
}

// loadProgress is a loading node's loading_* fields (INFO persistence):
// how much of its RDB it has loaded, and the server's own estimate of the
// time left. Read is false when the node did not say.
type loadProgress struct {
	Read                    bool
	LoadedBytes, TotalBytes int64
	// ETASeconds is loading_eta_seconds: the time so far scaled by the
	// bytes left, as the server computes it.
	ETASeconds int64
}

// text describes the load: "N of M bytes loaded, about T s left"; "" when
// unread.
func (l loadProgress) text() string {
	if !l.Read {
		return ""
	}
	return fmt.Sprintf("%d of %d bytes loaded, about %d s left (loading_eta_seconds)", l.LoadedBytes, l.TotalBytes, l.ETASeconds)
}

// parseLoadProgress reads INFO persistence's loading_* fields of a node
// that is loading; Read is false when it says it is not (loading:0) or a
// field is missing.
func parseLoadProgress(fields redisproto.InfoFields) loadProgress {
	if fields.Value("loading") != "1" {
		return loadProgress{}
	}
	l := loadProgress{Read: true}
	for _, f := range []struct {
		key string
		v   *int64
	}{{"loading_loaded_bytes", &l.LoadedBytes}, {"loading_total_bytes", &l.TotalBytes}, {"loading_eta_seconds", &l.ETASeconds}} {
		n, err := strconv.ParseInt(fields.Value(f.key), 10, 64)
		if err != nil || n < 0 {
			return loadProgress{}
		}
		*f.v = n
	}
	return l
}

// parseReplicaSync reads a replica's master_sync_* fields; the byte counts
// are only there during a sync, and a total of -1 (a diskless sync, whose
// size nobody knows in advance) is kept as 0.
func parseReplicaSync(fields redisproto.InfoFields) replicaSync {
	s := replicaSync{InProgress: fields.Value("master_sync_in_progress") == "1"}
	if !s.InProgress {
		return s
	}
	s.ReadBytes, _ = strconv.ParseInt(fields.Value("master_sync_read_bytes"), 10, 64)
	s.TotalBytes, _ = strconv.ParseInt(fields.Value("master_sync_total_bytes"), 10, 64)
	s.ReadBytes, s.TotalBytes = max(s.ReadBytes, 0), max(s.TotalBytes, 0)
	return s
}

// parseBacklog reads a master's repl_backlog_* fields; an absent field (an
// old server) leaves the backlog unknown, never read as empty.
func parseBacklog(fields redisproto.InfoFields) (replicationBacklog, bool) {
	var b replicationBacklog
	values := make([]int64, 4)
	for i, key := range []string{"repl_backlog_active", "repl_backlog_size", "repl_backlog_first_byte_offset", "repl_backlog_histlen"} {
		v, ok := fields.Get(key)
		if !ok {
			return b, false
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return b, false
		}
		values[i] = n
	}
	b.Active, b.Size, b.FirstByte, b.History = values[0] == 1, values[1], values[2], values[3]
	return b, true
}

func parseReplicationInfo(fields redisproto.InfoFields) (replicationInfo, error) {
	var ri replicationInfo
	switch role := fields.Value("role"); role {
	case "master":
		ri.IsMaster = true
	case "slave", "replica":
		ri.MasterLinkUp = fields.Value("master_link_status") == "up"
		ri.Sync = parseReplicaSync(fields)
	default:
		return ri, fmt.Errorf("INFO replication: unknown role %q", role)
	}
	var err error
	if ri.MasterReplOffset, err = strconv.ParseInt(fields.Value("master_repl_offset"), 10, 64); err != nil {
		return ri, fmt.Errorf("INFO replication: master_repl_offset: %w", err)
	}
	if !ri.IsMaster {
		return ri, nil
	}
	ri.Backlog, ri.BacklogRead = parseBacklog(fields)
	connected, err := strconv.Atoi(fields.Value("connected_slaves"))
	if err != nil {
		return ri, fmt.Errorf("INFO replication: connected_slaves: %w", err)
	}
	for i := 0; i < connected; i++ {
		key := "slave" + strconv.Itoa(i)
		value, ok := fields.Get(key)
		if !ok {
			// connected_slaves and the slaveN lines come from one snapshot;
			// a gap means a reply we do not understand.
			return ri, fmt.Errorf("INFO replication: connected_slaves is %d but %s is missing", connected, key)
		}
		r, err := parseReplicaOffset(value)
		if err != nil {
			return ri, fmt.Errorf("INFO replication: %s: %w", key, err)
		}
		ri.Replicas = append(ri.Replicas, r)
	}
	return ri, nil
}

// parseReplicaOffset parses "ip=127.0.0.1,port=7003,state=online,offset=42,lag=0".
func parseReplicaOffset(s string) (replicaOffset, error) {
	var (
		r        replicaOffset
		ip, port string
		err      error
	)
	for rest := s; rest != ""; {
		var kv string
		kv, rest, _ = strings.Cut(rest, ",")
		key, value, ok := strings.Cut(kv, "=")
		if !ok {
			return r, fmt.Errorf("%q is not key=value", kv)
		}
		switch key {
		case "ip":
			ip = value
		case "port":
			port = value
		case "offset":
			if r.Offset, err = strconv.ParseInt(value, 10, 64); err != nil {
				return r, fmt.Errorf("offset: %w", err)
			}
		}
	}
	if ip == "" || port == "" {
		return r, fmt.Errorf("%q has no ip or port", s)
	}
	r.Addr = net.JoinHostPort(ip, port)
	return r, nil
}

// parseUsedMemory reads used_memory from INFO memory.
func parseUsedMemory(fields redisproto.InfoFields) (uint64, error) {
	used, err := strconv.ParseUint(fields.Value("used_memory"), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("INFO memory: used_memory: %w", err)
	}
	return used, nil
}

// RedirectErrors are the error replies a node counts in INFO errorstats
// that tell a client its view of the cluster is wrong or the cluster is
// changing: MOVED (the slot has another owner), ASK (it is being migrated),
// TRYAGAIN (a multi-key command during a migration), CLUSTERDOWN (the
// cluster cannot serve) and READONLY (a write sent to a replica). The
// label's values are these and nothing a client chose.
var RedirectErrors = []string{"MOVED", "ASK", "TRYAGAIN", "CLUSTERDOWN", "READONLY"}

// SyncCounts are the syncs a node served to its replicas since its start
// or CONFIG RESETSTAT (INFO stats): full syncs of the whole data set, and
// PSYNCs accepted (resumed from its backlog) or refused (which then became
// full syncs).
type SyncCounts struct {
	Full, PartialOK, PartialErr uint64
}

// parseSyncStats reads sync_full, sync_partial_ok and sync_partial_err
// from an INFO stats reply; a reply without them is an error.
func parseSyncStats(text string) (SyncCounts, error) {
	var c SyncCounts
	fields, err := redisproto.ParseInfoFields(text)
	if err != nil {
		return c, fmt.Errorf("INFO stats: %w", err)
	}
	for _, f := range []struct {
		key string
		to  *uint64
	}{{"sync_full", &c.Full}, {"sync_partial_ok", &c.PartialOK}, {"sync_partial_err", &c.PartialErr}} {
		v, ok := fields.Get(f.key)
		if !ok {
			return c, fmt.Errorf("INFO stats has no %s", f.key)
		}
		if *f.to, err = strconv.ParseUint(v, 10, 64); err != nil {
			return c, fmt.Errorf("INFO stats: %s: %w", f.key, err)
		}
	}
	return c, nil
}

// parseErrorStats reads INFO errorstats (Redis 6.2+, Valkey): the count
// of each of RedirectErrors the node replied since its start or CONFIG
// RESETSTAT. read is false when the server has no such section (it then
// answers an empty string); a kind it never replied is 0.
func parseErrorStats(text string) (counts map[string]uint64, read bool, err error) {
	text = redisproto.StripVerbatim(text)
	if !strings.Contains(text, "# Errorstats") {
		return nil, false, nil
	}
	fields, err := redisproto.ParseInfoFields(text)
	if err != nil {
		return nil, false, fmt.Errorf("INFO errorstats: %w", err)
	}
	counts = make(map[string]uint64, len(RedirectErrors))
	for _, kind := range RedirectErrors {
		v, ok := fields.Get("errorstat_" + kind)
		if !ok {
			counts[kind] = 0
			continue
		}
		n, found := strings.CutPrefix(v, "count=")
		if !found {
			return nil, false, fmt.Errorf("INFO errorstats: errorstat_%s is %q, want count=N", kind, v)
		}
		if counts[kind], err = strconv.ParseUint(n, 10, 64); err != nil {
			return nil, false, fmt.Errorf("INFO errorstats: errorstat_%s: %w", kind, err)
		}
	}
	return counts, true, nil
}
