package kafka

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// logDirsCordonVersion is the DescribeLogDirs version (API 35) from which
// a log directory says whether it is cordoned (Kafka 4.3, KIP-1066: no new
// replica is placed there, the step before decommissioning it).
const logDirsCordonVersion = 5

// LogDir is one log directory of a broker, as the broker describes it.
type LogDir struct {
	Path     string
	Cordoned bool
	// Offline is true when the broker reports the directory failed
	// (KAFKA_STORAGE_ERROR): its replicas are offline.
	Offline bool
}

// logDirsRead is one read of every live broker's log directories;
// unsupported when no broker says whether a directory is cordoned (before
// Kafka 4.3).
type logDirsRead struct {
	// dirs are the directories of each broker that answered with
	// logDirsCordonVersion or later, by broker ID.
	dirs map[int32][]LogDir
	readOutcome
}

// logDirsReader reads every live broker's log directories beside the
// refreshes.
type logDirsReader = brokerReader[logDirsRead]

var logDirsKind = readKind{
	kind:        "log_dirs",
	unsupported: "brokers do not say whether log directories are cordoned (DescribeLogDirs v5, Kafka 4.3+); log directory series are not served",
	failed:      "reading some brokers' log directories failed; their log directory series are not served",
}

// readLogDirs takes the outcome of the read the previous refreshes
// started, starts the next one for brokers (live, ID to address), and
// sets the log directories of snap's brokers from the last read that
// ended.
func (s *source) readLogDirs(brokers map[int32]string, snap *Snapshot) {
	r := &s.logDirs
	r.keep(s, logDirsKind)
	if !r.paused(s.now()) {
		timeout := s.cfg.RequestTimeout
		err := r.start(s.cfg, brokers, func(handles map[int32]*kgo.Broker) logDirsRead { return describeLogDirs(handles, timeout) })
		if err != nil {
			s.logFailure("log_dirs", "reading the brokers' log directories failed; their series are not served", err)
		}
	}
	if r.last == nil {
		return
	}
	for i := range snap.Brokers {
		b := &snap.Brokers[i]
		if dirs, ok := r.last.dirs[b.ID]; ok && b.Up {
			b.LogDirs = dirs
		}
	}
}

// describeLogDirs asks every broker, at once, for its log directories (no
// topics: only the directories), each request bounded by timeout.
func describeLogDirs(handles map[int32]*kgo.Broker, timeout time.Duration) logDirsRead {
	read := logDirsRead{dirs: map[int32][]LogDir{}}
	read.readOutcome = askBrokers(handles, timeout, func(ctx context.Context, id int32, broker *kgo.Broker) (func(), bool, error) {
		req := kmsg.NewPtrDescribeLogDirsRequest()
		req.Topics = []kmsg.DescribeLogDirsRequestTopic{} // none: not null, which means all
		kresp, err := broker.Request(ctx, req)
		if err != nil {
			return nil, false, fmt.Errorf("describe log dirs of broker %d: %w", id, err)
		}
		resp := kresp.(*kmsg.DescribeLogDirsResponse)
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return nil, false, fmt.Errorf("describe log dirs of broker %d: %w", id, err)
		}
		if resp.GetVersion() < logDirsCordonVersion {
			return nil, false, nil
		}
		dirs := logDirsFrom(resp)
		return func() { read.dirs[id] = dirs }, true, nil
	})
	return read
}

// logDirsFrom is a DescribeLogDirs answer's directories, by path.
func logDirsFrom(resp *kmsg.DescribeLogDirsResponse) []LogDir {
	dirs := make([]LogDir, 0, len(resp.Dirs))
	for _, d := range resp.Dirs {
		dirs = append(dirs, LogDir{Path: d.Dir, Cordoned: d.IsCordoned, Offline: d.ErrorCode != 0})
	}
	slices.SortFunc(dirs, func(a, b LogDir) int { return strings.Compare(a.Path, b.Path) })
	return dirs
}

// CordonedLogDirs counts the broker's cordoned log directories.
func (b *Broker) CordonedLogDirs() int {
	n := 0
	for _, d := range b.LogDirs {
		if d.Cordoned {
			n++
		}
	}
	return n
}
