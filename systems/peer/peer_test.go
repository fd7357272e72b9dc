package peer

import (
	"context"
	"net"
	"testing"
	"time"
)

func TestHintSaysWhatAnswered(t *testing.T) {
	cases := []struct {
		want, got Kind
		addr      string
		hint      string
	}{
		{Redis, KafkaBroker, "h:9092", "the server at h:9092 does not speak the Redis protocol; it answers as a Kafka broker"},
		{Redis, KafkaController, "h:9093", "the server at h:9093 does not speak the Redis protocol; it answers as a Kafka KRaft controller"},
		{Redis, RedisClusterBus, "h:17000", "h:17000 is the cluster bus port of the Redis node at h:7000, not its client port"},
		{KafkaBroker, KafkaController, "h:9093", "h:9093 is a KRaft controller listener, not a broker listener"},
		{KafkaBroker, Redis, "h:7000", "the server at h:7000 does not speak the Kafka protocol; it answers as a Redis server"},
		{KafkaBroker, RedisClusterBus, "h:17000", "the server at h:17000 does not speak the Kafka protocol; it is a Redis Cluster bus port"},
		// What was expected, or nothing known: no hint.
		{Redis, Redis, "h:7000", ""},
		{KafkaBroker, KafkaBroker, "h:9092", ""},
		{KafkaBroker, Unknown, "h:9092", ""},
	}
	for _, c := range cases {
		got := Hint(c.addr, c.want, c.got)
		if c.hint == "" && got != "" || c.hint != "" && (len(got) < len(c.hint) || got[:len(c.hint)] != c.hint) {
			t.Errorf("Hint(%s, want %d, got %d) = %q, want %q", c.addr, c.want, c.got, got, c.hint)
		}
	}
}

// TestIdentifyUnknownServerIsQuick: a server that closes every connection
// at once (as a TLS-only port does with plain bytes) is Unknown, found
// without waiting for the deadline.
func TestIdentifyUnknownServerIsQuick(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if k := Identify(ctx, l.Addr().String()); k != Unknown {
		t.Errorf("Identify = %d, want Unknown", k)
	}
	// Generous bound for a loaded machine; the deadline is 5s.
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("took %s", took)
	}
	var c Cache
	if h := c.Hint(l.Addr().String(), Redis, time.Second); h != "" {
		t.Errorf("hint for an unknown server: %q", h)
	}
}
