package kafkaclient

import (
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/failover-exporter/failover_exporter/systems/kafka/settings"
)

// FranzOptions are a franz-go client's options for the cluster: its
// bootstrap servers, client ID, dial and request timeouts, TLS and SASL,
// as the watcher's own clients have them, for another system that reads
// the cluster (systems/mirror). The client keeps its own metadata.
func FranzOptions(cfg settings.Cluster) ([]kgo.Opt, error) {
	_, opts, err := Configs(cfg)
	return opts, err
}
