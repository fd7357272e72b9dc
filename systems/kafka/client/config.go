package kafkaclient

import (
	"fmt"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/failover-exporter/failover_exporter/systems/kafka/settings"
)

// SaramaConfig is the sarama half of the watcher's client configuration,
// for the write canary, which produces and reads back with sarama only.
func SaramaConfig(cfg settings.Cluster) (*sarama.Config, error) {
	conf, _, err := Configs(cfg)
	return conf, err
}

// Configs translates the cluster config into sarama's config and
// franz-go's options (bootstrap servers, client ID, timeouts, TLS, SASL),
// for the watcher, which uses both clients. Every network call gets the
// dial and request timeouts, so a hung broker costs at most one timeout.
func Configs(cfg settings.Cluster) (*sarama.Config, []kgo.Opt, error) {
	conf := sarama.NewConfig()
	version, err := sarama.ParseKafkaVersion(cfg.Version)
	if err != nil {
		return nil, nil, fmt.Errorf("kafka version %q: %w", cfg.Version, err)
	}
	conf.Version = version
	conf.ClientID = cfg.ClientID
	conf.Net.DialTimeout = cfg.DialTimeout
	conf.Net.ReadTimeout = cfg.RequestTimeout
	conf.Net.WriteTimeout = cfg.RequestTimeout
	conf.Net.MaxOpenRequests = 1
	conf.Metadata.AllowAutoTopicCreation = false

	security, err := clientSecurity(cfg, conf)
	if err != nil {
		return nil, nil, err
	}
	if err := conf.Validate(); err != nil {
		return nil, nil, fmt.Errorf("kafka client config: %w", err)
	}
	return conf, append(security,
		kgo.SeedBrokers(cfg.BootstrapServers...),
		kgo.ClientID(cfg.ClientID),
		kgo.DialTimeout(cfg.DialTimeout),
		kgo.RequestTimeoutOverhead(cfg.RequestTimeout),
		kgo.RetryTimeout(cfg.RequestTimeout),
		kgo.RequestRetries(1),
	), nil
}
