package sentinel

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/failover-exporter/failover_exporter/systems/sentinel/settings"
	"github.com/redis/rueidis"
)

// parseMasters reads SENTINEL MASTERS: one field map per master, by name
// (a map in RESP3, pairs in RESP2, which AsStrMap both reads).
func parseMasters(reply rueidis.RedisResult) (map[string]map[string]string, error) {
	entries, err := reply.ToArray()
	if err != nil {
		return nil, fmt.Errorf("SENTINEL MASTERS: %w", err)
	}
	out := make(map[string]map[string]string, len(entries))
	for _, e := range entries {
		fields, err := e.AsStrMap()
		if err != nil {
			return nil, fmt.Errorf("SENTINEL MASTERS: %w", err)
		}
		if !settings.LabelSafe(fields["name"]) {
			return nil, fmt.Errorf("SENTINEL MASTERS: a master name that is empty, longer than %d bytes or not printable ASCII: %q", settings.MaxLabel, truncate(fields["name"]))
		}
		out[fields["name"]] = fields
	}
	return out, nil
}

// parseReport reads one sentinel's view of one master: its SENTINEL
// MASTERS fields, then the replies to GET-MASTER-ADDR-BY-NAME, REPLICAS,
// SENTINELS and CKQUORUM, in that order.
func parseReport(sentinel string, fields map[string]string, replies []rueidis.RedisResult) (Report, error) {
	r := Report{
		Sentinel:       sentinel,
		Quorum:         int(atoi64(fields["quorum"])),
		ConfigEpoch:    atoi64(fields["config-epoch"]),
		OtherSentinels: int(atoi64(fields["num-other-sentinels"])),
		DownAfter:      time.Duration(atoi64(fields["down-after-milliseconds"])) * time.Millisecond,
		Instance:       hostPort(fields["ip"], fields["port"]),
	}
	for _, f := range strings.Split(fields["flags"], ",") {
		switch f {
		case "s_down":
			r.SDown = true
		case "o_down":
			r.ODown = true
		case "failover_in_progress", "promoted":
			r.Failover = true
		}
	}
	addr, err := replies[0].AsStrSlice()
	if err != nil || len(addr) != 2 {
		return r, fmt.Errorf("SENTINEL GET-MASTER-ADDR-BY-NAME: %v %v", addr, err)
	}
	if r.Addr = hostPort(addr[0], addr[1]); !settings.LabelSafe(r.Addr) {
		return r, fmt.Errorf("SENTINEL GET-MASTER-ADDR-BY-NAME: not an address: %q", truncate(r.Addr))
	}
	if r.Replicas, err = parseReplicas(replies[1]); err != nil {
		return r, err
	}
	if r.Sentinels, err = parseSentinels(replies[2]); err != nil {
		return r, err
	}
	// CKQUORUM answers OK with a sentence, or an error saying why not.
	if text, err := replies[3].ToString(); err == nil {
		r.CKQuorum, r.CKQuorumText = true, text
	} else if _, isReply := rueidis.IsRedisErr(err); isReply {
		r.CKQuorumText = err.Error()
	} else {
		return r, fmt.Errorf("SENTINEL CKQUORUM: %w", err)
	}
	return r, nil
}

// parseReplicas reads SENTINEL REPLICAS.
func parseReplicas(reply rueidis.RedisResult) ([]ReplicaReport, error) {
	entries, err := reply.ToArray()
	if err != nil {
		return nil, fmt.Errorf("SENTINEL REPLICAS: %w", err)
	}
	out := make([]ReplicaReport, 0, len(entries))
	for _, e := range entries {
		f, err := e.AsStrMap()
		if err != nil {
			return nil, fmt.Errorf("SENTINEL REPLICAS: %w", err)
		}
		priority, err := strconv.Atoi(f["slave-priority"])
		if err != nil {
			priority = -1
		}
		rep := ReplicaReport{
			Addr:     hostPort(f["ip"], f["port"]),
			RunID:    f["runid"],
			Priority: priority,
			Offset:   atoi64(f["slave-repl-offset"]),
			LinkDown: time.Duration(atoi64(f["master-link-down-time"])) * time.Millisecond,
		}
		if !settings.LabelSafe(rep.Addr) {
			return nil, fmt.Errorf("SENTINEL REPLICAS: not an address: %q", truncate(rep.Addr))
		}
		for _, flag := range strings.Split(f["flags"], ",") {
			rep.Down = rep.Down || flag == "s_down" || flag == "o_down" || flag == "disconnected"
		}
		out = append(out, rep)
	}
	return out, nil
}

// parseSentinels reads SENTINEL SENTINELS: the other sentinels' addresses.
func parseSentinels(reply rueidis.RedisResult) ([]string, error) {
	entries, err := reply.ToArray()
	if err != nil {
		return nil, fmt.Errorf("SENTINEL SENTINELS: %w", err)
	}
	out := make([]string, 0, len(entries))
	for _, e := range entries {
		f, err := e.AsStrMap()
		if err != nil {
			return nil, fmt.Errorf("SENTINEL SENTINELS: %w", err)
		}
		addr := hostPort(f["ip"], f["port"])
		if !settings.LabelSafe(addr) {
			return nil, fmt.Errorf("SENTINEL SENTINELS: not an address: %q", truncate(addr))
		}
		out = append(out, addr)
	}
	return out, nil
}

// truncate shortens a refused value for an error message.
func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
