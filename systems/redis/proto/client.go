package redisproto

import (
	"fmt"
	"net"

	"github.com/redis/rueidis"

	"github.com/failover-exporter/failover_exporter/systems/redis/settings"
)

// ClientName is how the exporter's connections show up in CLIENT LIST;
// the canaries' names begin with it.
const ClientName = "failover_exporter"

// monitorRingScale makes each connection's ring 2^3 entries.
const monitorRingScale = 3

// ClientOption builds the rueidis options shared by every node's client,
// the watcher's and the write canary's; InitAddress is filled in per node.
// It reads the password once, so that a missing secret is reported at
// (re)load time rather than on every refresh.
func ClientOption(cfg settings.Cluster) (rueidis.ClientOption, error) {
	opt := rueidis.ClientOption{
		// One connection to exactly the node we name: the cluster client
		// would follow MOVED redirects and leave failed nodes out.
		ForceSingleClient: true,
		// Client-side caching would send CLIENT TRACKING and needs no ACL
		// permission we want to ask for.
		DisableCache: true,
		// The watcher refreshes on its own schedule; a retry would only
		// stretch a refresh past its deadline.
		DisableRetry: true,
		// CLIENT SETINFO is not needed and would be one more command to allow.
		ClientSetInfo: rueidis.DisableClientSetInfo,
		ClientName:    ClientName,
		Username:      cfg.Username,
		// Bounds both the TCP connect and the HELLO handshake.
		Dialer: net.Dialer{Timeout: cfg.DialTimeout},
		// Closes a connection whose reads or writes stall (a hung node), so a
		// stuck connection is replaced rather than reused.
		ConnWriteTimeout: cfg.CommandTimeout,
		// Sized for a monitor, not for application traffic: the exporter
		// sends one pipeline of a few small commands per node per refresh.
		// rueidis's defaults (0.5 MiB buffers and a 1,024-entry ring per
		// connection, two connections per node on two cores) cost about
		// 1 MB per node, most of a 100-node cluster's footprint.
		//
		// Replies larger than the read buffer (CLUSTER NODES of a large
		// cluster) are read through it, not into it: rueidis reads a bulk
		// string straight into a string of its length. The buffer only has
		// to hold a reply's header lines. A pipeline of our commands is a
		// few hundred bytes.
		ReadBufferEachConn:  4 << 10,
		WriteBufferEachConn: 1 << 10,
		// Entries for commands in flight on a connection: one pipeline per
		// refresh, plus rueidis's keepalive PING.
		RingScaleEachConn: monitorRingScale,
		// -1: one connection per node (2^0), whatever GOMAXPROCS.
		PipelineMultiplex: -1,
	}
	if cfg.Password.IsSet() {
		password, err := cfg.Password.Value()
		if err != nil {
			return opt, fmt.Errorf("redis password: %w", err)
		}
		opt.Password = password
	}
	// nil when TLS is off; the same builder serves the Kafka client.
	tlsConfig, err := cfg.TLS.ClientConfig()
	if err != nil {
		return opt, err
	}
	opt.TLSConfig = tlsConfig
	return opt, nil
}
