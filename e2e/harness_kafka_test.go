package e2e

import (
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/failover-exporter/failover_exporter/internal/lab"
)

// The tests' own Kafka clients, beside the exporter's: each starts from
// lab.ClientConfig, the one configuration of test clients.

func createTopic(t *testing.T, bootstrap []string, name string, configs map[string]*string) {
	t.Helper()
	admin, err := sarama.NewClusterAdmin(bootstrap, lab.ClientConfig())
	if err != nil {
		t.Fatalf("admin client: %v", err)
	}
	defer admin.Close()
	err = admin.CreateTopic(name, &sarama.TopicDetail{NumPartitions: 3, ReplicationFactor: 3, ConfigEntries: configs}, false)
	if err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
}

// produceAll writes one record with acks=all and returns the error.
func produceAll(bootstrap []string, topic string, retries int) error {
	conf := lab.ClientConfig()
	conf.Producer.Retry.Max = retries
	producer, err := sarama.NewSyncProducer(bootstrap, conf)
	if err != nil {
		return err
	}
	defer producer.Close()
	_, _, err = producer.SendMessage(&sarama.ProducerMessage{
		Topic: topic, Partition: 0, Value: sarama.StringEncoder("failover " + time.Now().String()),
	})
	return err
}
