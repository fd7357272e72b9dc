package redis

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// stripVerbatimPrefix removes the three-letter format and colon that RESP3
// verbatim strings start with ("txt:" for CLUSTER NODES, CLUSTER INFO and
// INFO). rueidis hands the payload back with the prefix still on. RESP2
// replies have no prefix, and no CLUSTER NODES or INFO reply can start with
// three lowercase letters and a colon, so stripping only "xxx:" is safe.
func stripVerbatimPrefix(s string) string {
	if len(s) >= 4 && s[3] == ':' && isLowerASCII(s[:3]) {
		return s[4:]
	}
	return s
}

func isLowerASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 'a' || s[i] > 'z' {
			return false
		}
	}
	return true
}

// infoFields is an INFO or CLUSTER INFO reply whose lines parseInfoFields
// has checked. Fields are looked up by scanning it: the exporter reads a few
// keys of every node's replies on every refresh, and a map of all the keys
// would be built only to be thrown away.
type infoFields string

// parseInfoFields checks "key:value" lines as in INFO and CLUSTER INFO.
// Section headers ("# Replication") and blank lines are skipped. A line with
// no colon is an error: it means the reply is not what we asked for.
func parseInfoFields(reply string) (infoFields, error) {
	reply = stripVerbatimPrefix(reply)
	for number, rest := 1, reply; rest != ""; number++ {
		var line string
		line, rest, _ = strings.Cut(rest, "\n")
		line = strings.TrimRight(line, "\r")
		if line == "" || line[0] == '#' {
			continue
		}
		if key, _, ok := strings.Cut(line, ":"); !ok || key == "" {
			return "", fmt.Errorf("line %d %q is not key:value", number, truncate(line, 64))
		}
	}
	return infoFields(reply), nil
}

// get returns the value of key; when a key repeats, the last one counts.
func (f infoFields) get(key string) (value string, ok bool) {
	for rest := string(f); rest != ""; {
		var line string
		line, rest, _ = strings.Cut(rest, "\n")
		if k, v, found := strings.Cut(strings.TrimRight(line, "\r"), ":"); found && k == key {
			value, ok = v, true
		}
	}
	return value, ok
}

// value returns the value of key, empty when it is missing.
func (f infoFields) value(key string) string {
	v, _ := f.get(key)
	return v
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// clusterInfo is the part of CLUSTER INFO the exporter uses, as the
// answering node sees the cluster.
// Slot counts and the like are not read from it: the snapshot counts them
// from the merged CLUSTER NODES, and a field that is not read must not fail
// the node's view.
type clusterInfo struct {
	StateOK      bool
	CurrentEpoch uint64
}

func parseClusterInfo(reply string) (clusterInfo, error) {
	fields, err := parseInfoFields(reply)
	if err != nil {
		return clusterInfo{}, fmt.Errorf("CLUSTER INFO: %w", err)
	}
	var ci clusterInfo
	switch state := fields.value("cluster_state"); state {
	case "ok":
		ci.StateOK = true
	case "fail":
	default:
		return ci, fmt.Errorf("CLUSTER INFO: cluster_state %q is neither ok nor fail", state)
	}
	if ci.CurrentEpoch, err = strconv.ParseUint(fields.value("cluster_current_epoch"), 10, 64); err != nil {
		return ci, fmt.Errorf("CLUSTER INFO: cluster_current_epoch: %w", err)
	}
	return ci, nil
}

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
}

func parseReplicationInfo(fields infoFields) (replicationInfo, error) {
	var ri replicationInfo
	switch role := fields.value("role"); role {
	case "master":
		ri.IsMaster = true
	case "slave", "replica":
		ri.MasterLinkUp = fields.value("master_link_status") == "up"
	default:
		return ri, fmt.Errorf("INFO replication: unknown role %q", role)
	}
	var err error
	if ri.MasterReplOffset, err = strconv.ParseInt(fields.value("master_repl_offset"), 10, 64); err != nil {
		return ri, fmt.Errorf("INFO replication: master_repl_offset: %w", err)
	}
	if !ri.IsMaster {
		return ri, nil
	}
	connected, err := strconv.Atoi(fields.value("connected_slaves"))
	if err != nil {
		return ri, fmt.Errorf("INFO replication: connected_slaves: %w", err)
	}
	for i := 0; i < connected; i++ {
		key := "slave" + strconv.Itoa(i)
		value, ok := fields.get(key)
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
func parseUsedMemory(fields infoFields) (uint64, error) {
	used, err := strconv.ParseUint(fields.value("used_memory"), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("INFO memory: used_memory: %w", err)
	}
	return used, nil
}
