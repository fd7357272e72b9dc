package kafka

import (
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/failover-exporter/failover_exporter/systems/kafka/settings"
)

func TestLogDirsFrom(t *testing.T) {
	resp := kmsg.NewPtrDescribeLogDirsResponse()
	for _, d := range []struct {
		path     string
		cordoned bool
		code     int16
	}{{"/data/b", true, 0}, {"/data/a", false, 56}} {
		dir := kmsg.NewDescribeLogDirsResponseDir()
		dir.Dir, dir.IsCordoned, dir.ErrorCode = d.path, d.cordoned, d.code
		resp.Dirs = append(resp.Dirs, dir)
	}
	want := []LogDir{{Path: "/data/a", Offline: true}, {Path: "/data/b", Cordoned: true}}
	if got := logDirsFrom(resp); !slices.Equal(got, want) {
		t.Errorf("dirs = %+v, want %+v (sorted by path; KAFKA_STORAGE_ERROR offline)", got, want)
	}
}

// A directory cordoned, then uncordoned, is an event each time, and shows
// on the status page's broker row and in the series; a refresh that could
// not read a broker's directories lists no change and serves none of its
// log directory series.
func TestCordonedLogDirs(t *testing.T) {
	rs := []int32{1, 2, 3}
	with := func(cordoned bool) *Snapshot {
		s := snapshotOf(rs, part{1, rs, rs})
		s.Brokers[0].LogDirs = []LogDir{{Path: "/d1"}, {Path: "/d2", Cordoned: cordoned}}
		return s
	}
	changes := func(s *Snapshot) []string {
		var out []string
		for _, e := range s.Events.All() {
			if e.Kind == EventLogDirCordoned || e.Kind == EventLogDirUncordoned {
				out = append(out, string(e.Kind)+" "+e.Subject.NodeID+" "+e.Before+">"+e.After)
			}
		}
		return out
	}
	open, cordoned, lifted := with(false), with(true), with(false)
	carryTransitions(open, cordoned)
	carryTransitions(cordoned, lifted)
	if got := changes(cordoned); !slices.Equal(got, []string{"log_dir_cordoned 1 >/d2"}) {
		t.Errorf("cordoned: %v", got)
	}
	if got := changes(lifted); !slices.Equal(got, []string{"log_dir_uncordoned 1 /d2>"}) {
		t.Errorf("uncordoned: %v", got)
	}
	unread := with(true)
	unread.Brokers[0].LogDirs = nil
	carryTransitions(open, unread)
	if got := changes(unread); len(got) != 0 {
		t.Errorf("directories not read: %v, want no change", got)
	}

	if row := summarize(cordoned).Brokers[0]; row.State != "up, 1 of 2 log dirs cordoned" {
		t.Errorf("status page state = %q", row.State)
	}
	// A reassignment under way when the cordon came still adds replicas:
	// the status page says so, as it works against draining the broker.
	cordoned.Brokers[0].AddingReplicas = 2
	if row := summarize(cordoned).Brokers[0]; row.State != "up, 1 of 2 log dirs cordoned, yet a reassignment is adding 2 replica(s) to it" {
		t.Errorf("status page state with a reassignment adding replicas = %q", row.State)
	}
	cordoned.Brokers[0].AddingReplicas = 0
	series := render(cordoned, settings.DefaultPartitionMetrics)
	for key, want := range map[string]float64{
		`kafka_broker_log_dirs{broker="1",kafka_cluster="k"}`:                       2,
		`kafka_broker_cordoned_log_dirs{broker="1",kafka_cluster="k"}`:              1,
		`kafka_broker_log_dir_cordoned{broker="1",kafka_cluster="k",log_dir="/d2"}`: 1,
		`kafka_broker_log_dir_cordoned{broker="1",kafka_cluster="k",log_dir="/d1"}`: 0,
		`kafka_broker_cordoned_log_dirs{broker="2",kafka_cluster="k"}`:              0,
	} {
		if got, ok := series[key]; !ok || got != want {
			t.Errorf("%s = %v (served: %v), want %v", key, got, ok, want)
		}
	}
	for key := range render(unread, settings.DefaultPartitionMetrics) {
		if strings.Contains(key, "log_dir") && strings.Contains(key, `broker="1"`) {
			t.Errorf("a broker whose directories were not read serves %s", key)
		}
	}
}
