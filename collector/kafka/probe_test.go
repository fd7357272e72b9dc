package kafka

import (
	"context"
	"net"
	"reflect"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/go-kit/log"

	"github.com/failover-exporter/failover_exporter/config"
)

func TestProbeTargetsKeepDownBrokersLastAddress(t *testing.T) {
	md := &sarama.MetadataResponse{}
	md.AddBroker("127.0.0.1:9091", 1)
	md.AddBroker("127.0.0.1:9092", 2)
	prev := &Snapshot{Brokers: []Broker{
		{ID: 1, Address: "127.0.0.1:9091"},
		{ID: 2, Address: "127.0.0.1:9092"},
		{ID: 3, Address: "127.0.0.1:9093"}, // unregistered since: still probed
		{ID: 4},                            // never had an address: nothing to dial
	}}
	if got, want := probeTargets(md, prev), []string{"127.0.0.1:9091", "127.0.0.1:9092", "127.0.0.1:9093"}; !reflect.DeepEqual(got, want) {
		t.Errorf("probeTargets = %v, want %v", got, want)
	}
	if got, want := probeTargets(md, nil), []string{"127.0.0.1:9091", "127.0.0.1:9092"}; !reflect.DeepEqual(got, want) {
		t.Errorf("probeTargets without a previous snapshot = %v, want %v", got, want)
	}
}

// A closed port is not reached, a listening one is, and the broker that
// answered the Metadata request counts as reached without a dial.
func TestProbeAddrsDialsEachAddress(t *testing.T) {
	open, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close()
	connected := "127.0.0.1:1" // nothing listens there: a dial would fail

	s := &source{cfg: config.KafkaCluster{DialTimeout: 2 * time.Second}, logger: log.NewNopLogger()}
	got := s.probeAddrs(context.Background(), []string{open.Addr().String(), closedAddr, connected, ""}, connected)
	want := map[string]bool{open.Addr().String(): true, connected: true}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("probeAddrs = %v, want %v", got, want)
	}
}
