// Command producer is the demo's steady load: a few acks=all records per
// second to a Kafka topic and a few SETs per second to a Redis Cluster, so
// that a killed leader or master is felt by real clients. It logs a line per
// failure and a summary every ten seconds; scripts/demo.sh runs it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/IBM/sarama"
	"github.com/redis/rueidis"
)

type options struct {
	kafkaBrokers []string
	topic        string
	redisAddrs   []string
	interval     time.Duration
}

func main() {
	var o options
	var brokers, redisAddrs string
	flag.StringVar(&brokers, "kafka.brokers", "", "comma-separated Kafka bootstrap servers (empty: no Kafka load)")
	flag.StringVar(&o.topic, "kafka.topic", "demo", "topic to produce to")
	flag.StringVar(&redisAddrs, "redis.addrs", "", "comma-separated Redis Cluster nodes (empty: no Redis load)")
	flag.DurationVar(&o.interval, "interval", 250*time.Millisecond, "pause between two writes to each system")
	flag.Parse()
	o.kafkaBrokers = splitList(brokers)
	o.redisAddrs = splitList(redisAddrs)
	if len(o.kafkaBrokers) == 0 && len(o.redisAddrs) == 0 {
		fmt.Fprintln(os.Stderr, "producer: give --kafka.brokers, --redis.addrs or both")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		log.Printf("producer: %v", err)
		os.Exit(1)
	}
}

func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

func run(ctx context.Context, o options) error {
	errs := make(chan error, 2)
	running := 0
	if len(o.kafkaBrokers) > 0 {
		producer, err := newKafkaProducer(o.kafkaBrokers)
		if err != nil {
			return err
		}
		defer producer.Close()
		running++
		go func() { errs <- kafkaLoop(ctx, producer, o.topic, o.interval) }()
	}
	if len(o.redisAddrs) > 0 {
		client, err := rueidis.NewClient(rueidis.ClientOption{
			InitAddress:      o.redisAddrs,
			DisableCache:     true,
			Dialer:           rueidisDialer(),
			ConnWriteTimeout: 2 * time.Second,
		})
		if err != nil {
			return fmt.Errorf("connect to Redis %v: %w", o.redisAddrs, err)
		}
		defer client.Close()
		running++
		go func() { errs <- redisLoop(ctx, client, o.interval) }()
	}
	var first error
	for ; running > 0; running-- {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

func newKafkaProducer(brokers []string) (sarama.SyncProducer, error) {
	conf := sarama.NewConfig()
	conf.Version = sarama.V4_1_0_0
	conf.ClientID = "failover-exporter-demo"
	conf.Net.DialTimeout = 2 * time.Second
	conf.Net.ReadTimeout = 10 * time.Second
	conf.Net.WriteTimeout = 5 * time.Second
	conf.Metadata.AllowAutoTopicCreation = false
	conf.Producer.RequiredAcks = sarama.WaitForAll
	conf.Producer.Return.Successes = true
	conf.Producer.Timeout = 5 * time.Second
	// Rides out a leader failover (a few seconds) instead of failing.
	conf.Producer.Retry.Max = 30
	conf.Producer.Retry.Backoff = 200 * time.Millisecond
	producer, err := sarama.NewSyncProducer(brokers, conf)
	if err != nil {
		return nil, fmt.Errorf("connect to Kafka %v: %w", brokers, err)
	}
	return producer, nil
}

func kafkaLoop(ctx context.Context, producer sarama.SyncProducer, topic string, interval time.Duration) error {
	var sent, failed int
	report := time.NewTicker(10 * time.Second)
	defer report.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			log.Printf("kafka: %d records sent, %d failed", sent, failed)
			return nil
		case <-report.C:
			log.Printf("kafka: %d records sent, %d failed", sent, failed)
		case <-time.After(interval):
		}
		// SendMessage is bounded by the producer's timeouts and retries.
		_, _, err := producer.SendMessage(&sarama.ProducerMessage{
			Topic: topic,
			Key:   sarama.StringEncoder(strconv.Itoa(n)),
			Value: sarama.StringEncoder(time.Now().UTC().Format(time.RFC3339Nano)),
		})
		if err != nil {
			failed++
			log.Printf("kafka: produce with acks=all: %v", err)
			continue
		}
		sent++
	}
}

func redisLoop(ctx context.Context, client rueidis.Client, interval time.Duration) error {
	var written, failed int
	report := time.NewTicker(10 * time.Second)
	defer report.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			log.Printf("redis: %d keys written, %d failed", written, failed)
			return nil
		case <-report.C:
			log.Printf("redis: %d keys written, %d failed", written, failed)
		case <-time.After(interval):
		}
		callCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		// 100 keys spread over all slots, rewritten in turn.
		key := "demo:" + strconv.Itoa(n%100)
		err := client.Do(callCtx, client.B().Set().Key(key).Value(strconv.Itoa(n)).Ex(time.Hour).Build()).Error()
		cancel()
		if err != nil && !errors.Is(err, context.Canceled) {
			failed++
			log.Printf("redis: SET %s: %v", key, err)
			continue
		}
		written++
	}
}

// rueidisDialer bounds connection attempts to nodes that are down.
func rueidisDialer() net.Dialer { return net.Dialer{Timeout: 2 * time.Second} }
