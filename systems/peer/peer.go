// Package peer tells what kind of server listens at an address, so that an
// exporter pointed at the wrong port says what it found there instead of
// "EOF" or "connection reset".
package peer

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Kind is what answered.
type Kind int

const (
	Unknown Kind = iota
	KafkaBroker
	KafkaController
	Redis
	// RedisClusterBus is a Redis node's cluster bus port (client port +
	// 10000), which speaks the nodes' binary gossip, not RESP.
	RedisClusterBus
)

// Kafka API keys read from an ApiVersions response.
const (
	apiMetadata    = 3
	apiApiVersions = 18
)

// correlationID marks the probe's request.
const correlationID = 0x46454f50 // "FEOP"

// kafkaRequest is an ApiVersions v0 request, which every Kafka listener
// answers. A Redis server never answers it: its inline parser stops at the
// first NUL byte and waits for a line end.
var kafkaRequest = func() []byte {
	clientID := "failover_exporter-probe"
	body := new(bytes.Buffer)
	_ = binary.Write(body, binary.BigEndian, int16(apiApiVersions))
	_ = binary.Write(body, binary.BigEndian, int16(0))
	_ = binary.Write(body, binary.BigEndian, int32(correlationID))
	_ = binary.Write(body, binary.BigEndian, int16(len(clientID)))
	body.WriteString(clientID)
	return append(binary.BigEndian.AppendUint32(nil, uint32(body.Len())), body.Bytes()...)
}()

// redisRequest is PING; a Kafka listener reads its first bytes as a frame
// size far over its limit and closes the connection.
const redisRequest = "*1\r\n$4\r\nPING\r\n"

// Identify connects to addr and reports what answered. It never blocks
// past ctx; a server that does not answer is Unknown.
func Identify(ctx context.Context, addr string) Kind {
	if k := identifyOne(ctx, addr); k != Unknown {
		return k
	}
	// A cluster bus closes the connection on the first bytes that are not
	// its own. Redis's default bus port is the client port + 10000.
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return Unknown
	}
	if p, err := strconv.Atoi(port); err == nil && p > 10000 {
		if hasBusPort(ctx, net.JoinHostPort(host, strconv.Itoa(p-10000)), port) {
			return RedisClusterBus
		}
	}
	return Unknown
}

// hasBusPort reports whether the Redis node at addr says, in its own CLUSTER
// NODES line, that its cluster bus port is busPort.
func hasBusPort(ctx context.Context, addr, busPort string) bool {
	conn, err := dial(ctx, addr)
	if err != nil {
		return false
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "*2\r\n$7\r\nCLUSTER\r\n$5\r\nNODES\r\n"); err != nil {
		return false
	}
	r := bufio.NewReader(conn)
	header, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(header, "$") {
		return false
	}
	n, err := strconv.Atoi(strings.TrimSpace(header[1:]))
	if err != nil || n <= 0 || n > 1<<20 {
		return false
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return false
	}
	for _, line := range strings.Split(string(body), "\n") {
		// <id> <ip:port@cport[,hostname]> <flags> ...
		fields := strings.Fields(line)
		if len(fields) > 2 && strings.Contains(fields[2], "myself") {
			_, cport, _ := strings.Cut(fields[1], "@")
			cport, _, _ = strings.Cut(cport, ",")
			return cport == busPort
		}
	}
	return false
}

// identifyOne asks in the Kafka and the Redis protocol at once, on two
// connections, and returns the first conclusive answer.
func identifyOne(ctx context.Context, addr string) Kind {
	results := make(chan Kind, 2)
	go func() { results <- askKafka(ctx, addr) }()
	go func() { results <- askRedis(ctx, addr) }()
	for range 2 {
		if k := <-results; k != Unknown {
			return k
		}
	}
	return Unknown
}

// dial connects with the context's deadline (or one second) on the
// connection.
func dial(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(time.Second)
	}
	_ = conn.SetDeadline(deadline)
	return conn, nil
}

func askRedis(ctx context.Context, addr string) Kind {
	conn, err := dial(ctx, addr)
	if err != nil {
		return Unknown
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, redisRequest); err != nil {
		return Unknown
	}
	first := make([]byte, 1)
	if _, err := io.ReadFull(conn, first); err != nil {
		return Unknown
	}
	// +PONG, or an error reply such as -NOAUTH: either way RESP.
	if first[0] == '+' || first[0] == '-' {
		return Redis
	}
	return Unknown
}

func askKafka(ctx context.Context, addr string) Kind {
	conn, err := dial(ctx, addr)
	if err != nil {
		return Unknown
	}
	defer conn.Close()
	if _, err := conn.Write(kafkaRequest); err != nil {
		return Unknown
	}
	head := make([]byte, 8)
	if _, err := io.ReadFull(conn, head); err != nil {
		return Unknown
	}
	size := binary.BigEndian.Uint32(head[:4])
	if binary.BigEndian.Uint32(head[4:]) != correlationID || size < 10 || size > 1<<16 {
		return Unknown
	}
	body := make([]byte, size-4)
	if _, err := io.ReadFull(conn, body); err != nil {
		return Unknown
	}
	// error_code int16, then [api_key int16, min int16, max int16].
	n := int(int32(binary.BigEndian.Uint32(body[2:6])))
	keys := map[int16]bool{}
	for i := 0; i < n && 6+i*6+6 <= len(body); i++ {
		keys[int16(binary.BigEndian.Uint16(body[6+i*6:]))] = true
	}
	if len(keys) > 0 && !keys[apiMetadata] {
		// Controller listeners serve the quorum's APIs, not Metadata.
		return KafkaController
	}
	return KafkaBroker
}

// Hint says what a client expecting want found at addr, or "" when it
// found what it expected or nothing it knows.
func Hint(addr string, want, got Kind) string {
	if got == want || got == Unknown {
		return ""
	}
	switch {
	case want == Redis && (got == KafkaBroker || got == KafkaController):
		return fmt.Sprintf("the server at %s does not speak the Redis protocol; it answers as a Kafka %s", addr, kafkaRole(got))
	case want == Redis && got == RedisClusterBus:
		host, port, _ := net.SplitHostPort(addr)
		p, _ := strconv.Atoi(port)
		return fmt.Sprintf("%s is the cluster bus port of the Redis node at %s, not its client port", addr, net.JoinHostPort(host, strconv.Itoa(p-10000)))
	case want == KafkaBroker && got == KafkaController:
		return fmt.Sprintf("%s is a KRaft controller listener, not a broker listener; give the brokers' addresses (listeners, not controller.quorum.bootstrap.servers)", addr)
	case want == KafkaBroker && got == Redis:
		return fmt.Sprintf("the server at %s does not speak the Kafka protocol; it answers as a Redis server", addr)
	case want == KafkaBroker && got == RedisClusterBus:
		return fmt.Sprintf("the server at %s does not speak the Kafka protocol; it is a Redis Cluster bus port", addr)
	}
	return ""
}

func kafkaRole(k Kind) string {
	if k == KafkaController {
		return "KRaft controller"
	}
	return "broker"
}

// Cache identifies each address at most once, in the background, and
// remembers the answer: a probe costs a connection, and a server that never
// answers must not hold up a refresh more than once.
type Cache struct {
	mu      sync.Mutex
	kinds   map[string]Kind
	pending map[string]chan struct{}
}

// probeTimeout bounds one Identify, run in the background.
const probeTimeout = 2 * time.Second

// Hint returns Hint(addr, want, kind) for what is at addr, waiting at most
// wait for a probe that is not finished yet.
func (c *Cache) Hint(addr string, want Kind, wait time.Duration) string {
	c.mu.Lock()
	if k, ok := c.kinds[addr]; ok {
		c.mu.Unlock()
		return Hint(addr, want, k)
	}
	done, ok := c.pending[addr]
	if !ok {
		if c.pending == nil {
			c.pending, c.kinds = map[string]chan struct{}{}, map[string]Kind{}
		}
		done = make(chan struct{})
		c.pending[addr] = done
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
			defer cancel()
			k := Identify(ctx, addr)
			c.mu.Lock()
			c.kinds[addr] = k
			delete(c.pending, addr)
			c.mu.Unlock()
			close(done)
		}()
	}
	c.mu.Unlock()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		return ""
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return Hint(addr, want, c.kinds[addr])
}
