package kafka

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// A broker is reached when it answers a Kafka request, not when its port
// accepts a TCP connection: a load balancer, a proxy or a cut path accepts
// connections for a broker that is dead or that the exporter cannot talk
// to, and a bare connect would call it reachable (issue 42, 2). The
// request is ApiVersions v0, which every broker answers before any SASL
// authentication (clients send it first), over TLS when the cluster's
// client uses TLS.

// apiVersionsKey is ApiVersions' API key.
const apiVersionsKey int16 = 18

// reachClientID is the client id of the reach request.
const reachClientID = "failover_exporter-reach"

// maxReachResponse bounds what is read of the answer: an ApiVersions
// answer lists some 90 APIs in well under a kilobyte.
const maxReachResponse = 64 << 10

// askAPIVersions dials addr and has it answer an ApiVersions request
// within timeout (and ctx), over TLS when tlsConf is not nil. A nil error
// means a Kafka broker answered.
func askAPIVersions(ctx context.Context, addr string, tlsConf *tls.Config, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var dialer net.Dialer
	conn, err := dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	if tlsConf != nil {
		conf := tlsConf.Clone()
		if conf.ServerName == "" {
			host, _, _ := net.SplitHostPort(addr)
			conf.ServerName = host
		}
		tlsConn := tls.Client(conn, conf)
		if err := tlsConn.HandshakeContext(ctx); err != nil {
			return fmt.Errorf("tls handshake: %w", err)
		}
		conn = tlsConn
	}
	const correlationID = 0x6661696c // "fail"
	req := apiVersionsRequest(correlationID)
	if _, err := conn.Write(req); err != nil {
		return fmt.Errorf("send ApiVersions: %w", err)
	}
	var size [4]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		return fmt.Errorf("read ApiVersions answer: %w", err)
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 6 || n > maxReachResponse {
		return fmt.Errorf("ApiVersions answer of %d bytes: not a Kafka broker", n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(conn, body); err != nil {
		return fmt.Errorf("read ApiVersions answer: %w", err)
	}
	if got := binary.BigEndian.Uint32(body); got != correlationID {
		return errors.New("ApiVersions answer for another request: not a Kafka broker")
	}
	// 0, or 35 (UNSUPPORTED_VERSION, with the versions it has): a broker
	// answered either way.
	if code := int16(binary.BigEndian.Uint16(body[4:])); code != 0 && code != 35 {
		return fmt.Errorf("ApiVersions answered error code %d", code)
	}
	return nil
}

// apiVersionsRequest is an ApiVersions v0 request, framed: size, then the
// v1 request header (key, version, correlation id, client id) and an
// empty body.
func apiVersionsRequest(correlationID uint32) []byte {
	b := make([]byte, 4, 4+2+2+4+2+len(reachClientID))
	b = binary.BigEndian.AppendUint16(b, uint16(apiVersionsKey))
	b = binary.BigEndian.AppendUint16(b, 0)
	b = binary.BigEndian.AppendUint32(b, correlationID)
	b = binary.BigEndian.AppendUint16(b, uint16(len(reachClientID)))
	b = append(b, reachClientID...)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}
