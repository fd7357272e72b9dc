package redisproto

import (
	"fmt"
	"strconv"
	"strings"
)

// StripVerbatim removes the three-letter format and colon that RESP3
// verbatim strings start with ("txt:" for CLUSTER NODES, CLUSTER INFO and
// INFO). rueidis hands the payload back with the prefix still on. RESP2
// replies have no prefix, and no CLUSTER NODES or INFO reply can start with
// three lowercase letters and a colon, so stripping only "xxx:" is safe.
func StripVerbatim(s string) string {
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

// InfoFields is an INFO or CLUSTER INFO reply whose lines ParseInfoFields
// has checked. Fields are looked up by scanning it: the exporter reads a few
// keys of every node's replies on every refresh, and a map of all the keys
// would be built only to be thrown away.
type InfoFields string

// ParseInfoFields checks "key:value" lines as in INFO and CLUSTER INFO.
// Section headers ("# Replication") and blank lines are skipped. A line with
// no colon is an error: it means the reply is not what we asked for.
func ParseInfoFields(reply string) (InfoFields, error) {
	reply = StripVerbatim(reply)
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
	return InfoFields(reply), nil
}

// Get returns the value of key; when a key repeats, the last one counts.
func (f InfoFields) Get(key string) (value string, ok bool) {
	for rest := string(f); rest != ""; {
		var line string
		line, rest, _ = strings.Cut(rest, "\n")
		if k, v, found := strings.Cut(strings.TrimRight(line, "\r"), ":"); found && k == key {
			value, ok = v, true
		}
	}
	return value, ok
}

// Value returns the value of key, empty when it is missing.
func (f InfoFields) Value(key string) string {
	v, _ := f.Get(key)
	return v
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// ClusterInfo is the part of CLUSTER INFO the exporter uses, as the
// answering node sees the cluster.
// Slot counts and the like are not read from it: the snapshot counts them
// from the merged CLUSTER NODES, and a field that is not read must not fail
// the node's view.
type ClusterInfo struct {
	StateOK      bool
	CurrentEpoch uint64
}

// ParseClusterInfo decodes the reply of CLUSTER INFO.
func ParseClusterInfo(reply string) (ClusterInfo, error) {
	fields, err := ParseInfoFields(reply)
	if err != nil {
		return ClusterInfo{}, fmt.Errorf("CLUSTER INFO: %w", err)
	}
	var ci ClusterInfo
	switch state := fields.Value("cluster_state"); state {
	case "ok":
		ci.StateOK = true
	case "fail":
	default:
		return ci, fmt.Errorf("CLUSTER INFO: cluster_state %q is neither ok nor fail", state)
	}
	if ci.CurrentEpoch, err = strconv.ParseUint(fields.Value("cluster_current_epoch"), 10, 64); err != nil {
		return ci, fmt.Errorf("CLUSTER INFO: cluster_current_epoch: %w", err)
	}
	return ci, nil
}
