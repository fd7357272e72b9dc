package redisproto

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
)

// NodeFlags are the flags of one CLUSTER NODES line.
type NodeFlags struct {
	Myself    bool
	Master    bool
	Replica   bool
	PFail     bool // "fail?": this observer cannot reach the node
	Fail      bool // the cluster agreed the node is down
	Handshake bool
	NoAddr    bool
}

// SlotRange is an inclusive range of hash slots.
type SlotRange struct{ First, Last int }

// SlotMove is one `[slot->-id]` (migrating) or `[slot-<-id]` (importing)
// entry: the slot and the node on the other side of the move.
type SlotMove struct {
	Slot   int
	NodeID string
}

// NodeLine is one line of CLUSTER NODES, as seen by the node that
// answered.
type NodeLine struct {
	ID string
	// Addr is "ip:port" (bracketed for IPv6), empty for noaddr nodes.
	Addr  string
	Flags NodeFlags
	// MasterID is the id of the master this node replicates, empty for masters.
	MasterID      string
	ConfigEpoch   uint64
	LinkConnected bool
	Slots         []SlotRange
	// Migrating and Importing only appear on the myself line.
	Migrating []SlotMove
	Importing []SlotMove
}

// SlotCount is how many slots the line lists for the node.
func (l *NodeLine) SlotCount() int {
	n := 0
	for _, r := range l.Slots {
		n += r.Last - r.First + 1
	}
	return n
}

// ParseClusterNodes parses the reply of CLUSTER NODES. Any malformed line
// fails the whole reply: a half-read topology would report slots as
// unassigned that are not.
//
// Every node of the cluster sends a reply listing every node on each
// refresh, so the parser walks the reply in place: fields are substrings,
// and nothing is allocated per line but the line itself and its slot ranges.
func ParseClusterNodes(reply string) ([]NodeLine, error) {
	reply = StripVerbatim(reply)
	lines := make([]NodeLine, 0, strings.Count(reply, "\n")+1)
	lineNumbers := make([]int, 0, cap(lines))
	for number, rest := 1, reply; rest != ""; number++ {
		var raw string
		raw, rest, _ = strings.Cut(rest, "\n")
		raw = strings.TrimSpace(raw)
		if raw == "" {
			continue
		}
		line, err := parseClusterNodesLine(raw)
		if err != nil {
			return nil, fmt.Errorf("CLUSTER NODES line %d: %w", number, err)
		}
		lines = append(lines, line)
		lineNumbers = append(lineNumbers, number)
	}
	if len(lines) == 0 {
		return nil, errors.New("CLUSTER NODES reply lists no nodes")
	}
	if i, j, dup := findDuplicateID(lines); dup {
		return nil, fmt.Errorf("CLUSTER NODES line %d: node %s listed twice (first on line %d)", lineNumbers[j], lines[j].ID, lineNumbers[i])
	}
	return lines, nil
}

// findDuplicateID returns the indexes of two lines with the same id, the
// earlier first. Sorting indexes costs one small slice where a set would
// cost a map per reply.
func findDuplicateID(lines []NodeLine) (first, second int, found bool) {
	order := make([]int32, len(lines))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int {
		if c := strings.Compare(lines[a].ID, lines[b].ID); c != 0 {
			return c
		}
		return int(a - b)
	})
	for k := 1; k < len(order); k++ {
		if a, b := order[k-1], order[k]; lines[a].ID == lines[b].ID {
			return int(a), int(b), true
		}
	}
	return 0, 0, false
}

// nextField splits off the first space-separated field of s.
func nextField(s string) (field, rest string) {
	s = strings.TrimLeft(s, " \t")
	if i := strings.IndexAny(s, " \t"); i >= 0 {
		return s[:i], s[i+1:]
	}
	return s, ""
}

// clusterNodesFixedFields is the number of fields every line has before its
// slots: id, address, flags, master, ping-sent, pong-recv, config-epoch and
// link-state.
const clusterNodesFixedFields = 8

func parseClusterNodesLine(raw string) (NodeLine, error) {
	var fields [clusterNodesFixedFields]string
	rest := raw
	for i := range fields {
		if fields[i], rest = nextField(rest); fields[i] == "" {
			return NodeLine{}, fmt.Errorf("want at least %d fields, got %d", clusterNodesFixedFields, i)
		}
	}
	var (
		line NodeLine
		err  error
	)
	line.ID = fields[0]
	if !validNodeID(line.ID) {
		return line, fmt.Errorf("invalid node id %q", line.ID)
	}
	if line.Addr, err = parseNodeAddress(fields[1]); err != nil {
		return line, err
	}
	line.Flags = parseNodeFlags(fields[2])
	if fields[3] != "-" {
		if !validNodeID(fields[3]) {
			return line, fmt.Errorf("invalid master id %q", fields[3])
		}
		line.MasterID = fields[3]
	}
	// Fields 4 and 5, ping-sent and pong-recv, are not used: a value this
	// parser does not understand there must not fail the node's view.
	if line.ConfigEpoch, err = strconv.ParseUint(fields[6], 10, 64); err != nil {
		return line, fmt.Errorf("config-epoch: %w", err)
	}
	switch fields[7] {
	case "connected":
		line.LinkConnected = true
	case "disconnected":
	default:
		return line, fmt.Errorf("unknown link state %q", fields[7])
	}
	for {
		var f string
		if f, rest = nextField(rest); f == "" {
			break
		}
		if err := line.addSlotField(f); err != nil {
			return line, err
		}
	}
	return line, nil
}

// validNodeID accepts the 40 hex characters Redis uses. Handshake nodes get a
// random id of the same shape, so nothing else is valid.
func validNodeID(id string) bool {
	if len(id) != 40 {
		return false
	}
	for _, c := range id {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// parseNodeAddress reads the "ip:port" of "ip:port@cport[,hostname[,aux...]]".
// The cluster bus port and hostname are not used, so they are not checked
// (Redis before 4.0 printed no @cport at all). noaddr nodes show ":0@0",
// which gives an empty address.
func parseNodeAddress(s string) (string, error) {
	hostPort, _, _ := strings.Cut(s, ",")
	hostPort, _, _ = strings.Cut(hostPort, "@")
	i := strings.LastIndexByte(hostPort, ':')
	if i < 0 {
		return "", fmt.Errorf("address %q has no port", s)
	}
	ip, portText := strings.Trim(hostPort[:i], "[]"), hostPort[i+1:]
	port, err := strconv.Atoi(portText)
	if err != nil || port < 0 || port > 65535 {
		return "", fmt.Errorf("address %q: invalid port", s)
	}
	if ip == "" || port == 0 {
		return "", nil
	}
	if ip == hostPort[:i] && !strings.Contains(ip, ":") {
		// Already "ip:port" as JoinHostPort writes it: keep the substring
		// rather than build the same string again for every line.
		return hostPort, nil
	}
	return net.JoinHostPort(ip, portText), nil
}

// parseNodeFlags reads the flags the exporter uses; others (nofailover,
// noflags, flags of later Redis versions) are ignored.
func parseNodeFlags(s string) NodeFlags {
	var f NodeFlags
	for s != "" {
		var flag string
		flag, s, _ = strings.Cut(s, ",")
		switch flag {
		case "myself":
			f.Myself = true
		case "master":
			f.Master = true
		case "slave", "replica":
			f.Replica = true
		case "fail?":
			f.PFail = true
		case "fail":
			f.Fail = true
		case "handshake":
			f.Handshake = true
		case "noaddr":
			f.NoAddr = true
		}
	}
	return f
}

// addSlotField parses "N", "N-M", "[N->-id]" or "[N-<-id]".
func (l *NodeLine) addSlotField(f string) error {
	if strings.HasPrefix(f, "[") {
		body, ok := strings.CutSuffix(f[1:], "]")
		if !ok {
			return fmt.Errorf("slot move %q: missing ]", f)
		}
		if slot, id, ok := strings.Cut(body, "->-"); ok {
			move, err := parseSlotMove(slot, id)
			if err != nil {
				return fmt.Errorf("migrating slot %q: %w", f, err)
			}
			l.Migrating = append(l.Migrating, move)
			return nil
		}
		if slot, id, ok := strings.Cut(body, "-<-"); ok {
			move, err := parseSlotMove(slot, id)
			if err != nil {
				return fmt.Errorf("importing slot %q: %w", f, err)
			}
			l.Importing = append(l.Importing, move)
			return nil
		}
		return fmt.Errorf("unknown slot move %q", f)
	}
	first, last, isRange := strings.Cut(f, "-")
	start, err := parseSlot(first)
	if err != nil {
		return fmt.Errorf("slot %q: %w", f, err)
	}
	end := start
	if isRange {
		if end, err = parseSlot(last); err != nil {
			return fmt.Errorf("slot range %q: %w", f, err)
		}
		if end < start {
			return fmt.Errorf("slot range %q runs backwards", f)
		}
	}
	l.Slots = append(l.Slots, SlotRange{First: start, Last: end})
	return nil
}

func parseSlotMove(slot, id string) (SlotMove, error) {
	n, err := parseSlot(slot)
	if err != nil {
		return SlotMove{}, err
	}
	if !validNodeID(id) {
		return SlotMove{}, fmt.Errorf("invalid node id %q", id)
	}
	return SlotMove{Slot: n, NodeID: id}, nil
}

func parseSlot(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("not a slot number: %q", s)
	}
	if n < 0 || n >= SlotCount {
		return 0, fmt.Errorf("slot %d out of range", n)
	}
	return n, nil
}
