package kafkaclient

import (
	"fmt"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	kafkasettings "github.com/failover-exporter/failover_exporter/systems/kafka/settings"
)

// clientSecurity turns the cluster's TLS and SASL settings into both
// clients' settings: it configures sarama's conf (Metadata, DescribeConfigs,
// ListPartitionReassignments) and returns franz-go's options (the requests
// sarama lacks). Security is read, resolved (the password) and tested in
// one place, so the two clients cannot drift apart.
func clientSecurity(cfg kafkasettings.Cluster, conf *sarama.Config) ([]kgo.Opt, error) {
	var opts []kgo.Opt
	tlsConf, err := cfg.TLS.ClientConfig()
	if err != nil {
		return nil, err
	}
	if tlsConf != nil {
		conf.Net.TLS.Enable = true
		conf.Net.TLS.Config = tlsConf
		// franz-go fills in ServerName per broker when it is empty, as
		// sarama does; each client gets its own copy.
		opts = append(opts, kgo.DialTLSConfig(tlsConf.Clone()))
	}

	sc := cfg.SASL
	if sc.Mechanism == "" {
		return opts, nil
	}
	password, err := sc.Password.Value()
	if err != nil {
		return nil, fmt.Errorf("sasl.password: %w", err)
	}
	conf.Net.SASL.Enable = true
	conf.Net.SASL.Handshake = true
	conf.Net.SASL.User = sc.Username
	conf.Net.SASL.Password = password
	switch sc.Mechanism {
	case "PLAIN":
		conf.Net.SASL.Mechanism = sarama.SASLTypePlaintext
		opts = append(opts, kgo.SASL(plain.Auth{User: sc.Username, Pass: password}.AsMechanism()))
	case "SCRAM-SHA-256":
		conf.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA256
		conf.Net.SASL.SCRAMClientGeneratorFunc = newSCRAMClient(sha256Hash)
		opts = append(opts, kgo.SASL(scram.Auth{User: sc.Username, Pass: password}.AsSha256Mechanism()))
	case "SCRAM-SHA-512":
		conf.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA512
		conf.Net.SASL.SCRAMClientGeneratorFunc = newSCRAMClient(sha512Hash)
		opts = append(opts, kgo.SASL(scram.Auth{User: sc.Username, Pass: password}.AsSha512Mechanism()))
	default:
		return nil, fmt.Errorf("unsupported sasl.mechanism %q", sc.Mechanism)
	}
	return opts, nil
}
