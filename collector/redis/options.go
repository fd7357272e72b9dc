package redis

import (
	"fmt"
	"net"

	"github.com/redis/rueidis"

	"github.com/failover-exporter/failover_exporter/config"
)

// clientName is how the exporter's connections show up in CLIENT LIST.
const clientName = "failover_exporter"

// baseClientOption builds the rueidis options shared by every node's client;
// InitAddress is filled in per node. It reads the password once, so that a
// missing secret is reported at (re)load time rather than on every refresh.
func baseClientOption(cfg config.RedisCluster) (rueidis.ClientOption, error) {
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
		ClientName:    clientName,
		Username:      cfg.Username,
		// Bounds both the TCP connect and the HELLO handshake.
		Dialer: net.Dialer{Timeout: cfg.DialTimeout},
		// Closes a connection whose reads or writes stall (a hung node), so a
		// stuck connection is replaced rather than reused.
		ConnWriteTimeout: cfg.CommandTimeout,
		// The exporter sends a handful of commands per refresh; small
		// buffers keep 100-node clusters cheap.
		ReadBufferEachConn:  64 << 10,
		WriteBufferEachConn: 4 << 10,
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
