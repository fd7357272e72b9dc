// Package collector runs one watcher per configured cluster and keeps the
// set of watchers in line with the configuration across reloads.
package collector

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/failover-exporter/failover_exporter/collector/canary/kafkacanary"
	"github.com/failover-exporter/failover_exporter/collector/canary/rediscanary"
	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/collector/exposition"
	"github.com/failover-exporter/failover_exporter/collector/kafka"
	"github.com/failover-exporter/failover_exporter/collector/redis"
	"github.com/failover-exporter/failover_exporter/collector/watch"
	"github.com/failover-exporter/failover_exporter/config"
)

// running is one watcher goroutine.
type running struct {
	fingerprint string
	cancel      context.CancelFunc
	done        chan struct{}
	ready       <-chan struct{}
	// remove stops the collector serving the cluster.
	remove func()
}

// Manager owns the watchers and the collectors that serve them.
type Manager struct {
	logger log.Logger
	kafka  *kafka.Collector
	redis  *redis.Collector
	events *events.Log
	// kafkaCanary and redisCanary serve the write canaries of the clusters
	// that enable one.
	kafkaCanary *kafkacanary.Collector
	redisCanary *rediscanary.Collector

	mu      sync.Mutex
	running map[string]*running
}

// NewManager returns a manager with no clusters, whose event log keeps the
// last eventCapacity events (events.DefaultCapacity when not positive).
func NewManager(logger log.Logger, eventCapacity int) *Manager {
	return &Manager{
		logger:      logger,
		kafka:       kafka.NewCollector(),
		redis:       redis.NewCollector(),
		kafkaCanary: kafkacanary.NewCollector(),
		redisCanary: rediscanary.NewCollector(),
		events:      events.NewLog(eventCapacity, logger),
		running:     map[string]*running{},
	}
}

// Kafka is the Kafka collector, for the status page.
func (m *Manager) Kafka() *kafka.Collector { return m.kafka }

// Redis is the Redis collector, for the status page.
func (m *Manager) Redis() *redis.Collector { return m.redis }

// KafkaCanary serves the Kafka write canaries, for the status page.
func (m *Manager) KafkaCanary() *kafkacanary.Collector { return m.kafkaCanary }

// Events is the log of the transitions every watcher observed and of what
// the write canaries saw.
func (m *Manager) Events() *events.Log { return m.events }

// TextWriters are the cluster collectors, served as pre-rendered text
// after the registry: a large cluster's series are too many for the
// registry path, and both collectors render the same way.
func (m *Manager) TextWriters() []exposition.TextWriter {
	return []exposition.TextWriter{m.kafka, m.redis, m.kafkaCanary, m.redisCanary}
}

// starter is one cluster of a new config. start is nil when the cluster's
// running watcher can stay; otherwise the watcher is already built, so
// that starting it cannot fail once old watchers are being stopped.
type starter struct {
	fingerprint string
	start       func(ctx context.Context) (ready <-chan struct{}, done chan struct{})
	remove      func()
}

// plan prepares the watcher of one cluster: newWatcher builds it, serve
// hands it to its collector, remove takes it away again.
func plan[S any](m *Manager, key string, settings interface{ Fingerprint() (string, error) }, newWatcher func() (*watch.Watcher[S], error), serve func(*watch.Watcher[S]), remove func()) (starter, error) {
	// Read now, so that a secret or certificate rotated in its file counts
	// as a change.
	fp, err := settings.Fingerprint()
	if err != nil {
		return starter{}, err
	}
	s := starter{fingerprint: fp, remove: remove}
	if r, ok := m.current(key); ok && r.fingerprint == fp {
		return s, nil
	}
	w, err := newWatcher()
	if err != nil {
		return starter{}, err
	}
	s.start = func(ctx context.Context) (<-chan struct{}, chan struct{}) {
		serve(w)
		done := make(chan struct{})
		go func() { defer close(done); w.Run(ctx) }()
		return w.Ready(), done
	}
	return s, nil
}

// Apply makes the running watchers match cfg: clusters whose settings did
// not change keep running (and keep their transition counters), changed
// ones are restarted, removed ones stopped. If any cluster cannot be set
// up, nothing changes and the error says which.
func (m *Manager) Apply(cfg *config.Config) error {
	// Keys are system and cluster name; names are unique per system.
	starters := map[string]starter{}
	for _, kc := range cfg.Kafka {
		s, err := plan(m, "kafka/"+kc.Name, kc,
			func() (*watch.Watcher[kafka.Snapshot], error) { return kafka.NewWatcher(kc, m.logger) },
			func(w *watch.Watcher[kafka.Snapshot]) {
				m.kafka.Set(kc.Name, w, kc.PartitionMetricsEnabled())
				events.Follow(m.events, "kafka", kc.Name, w, func(s *kafka.Snapshot) []events.Event { return s.Events.All() })
			},
			func() { m.kafka.Remove(kc.Name) })
		if err != nil {
			return fmt.Errorf("kafka cluster %q: %w", kc.Name, err)
		}
		starters["kafka/"+kc.Name] = s
		if !kc.Canary.Enabled {
			continue // the canary writes to the cluster: only when asked
		}
		s, err = plan(m, "kafka_canary/"+kc.Name, kc,
			func() (*watch.Watcher[kafkacanary.Snapshot], error) { return kafkacanary.NewWatcher(kc, m.logger) },
			func(w *watch.Watcher[kafkacanary.Snapshot]) {
				m.kafkaCanary.Set(kc.Name, w)
				// Under the cluster's own system and name, next to its
				// transitions: a lost write belongs in the failover's story.
				events.Follow(m.events, "kafka", kc.Name, w, func(s *kafkacanary.Snapshot) []events.Event { return s.Events.All() })
			},
			func() { m.kafkaCanary.Remove(kc.Name) })
		if err != nil {
			return fmt.Errorf("kafka cluster %q: canary: %w", kc.Name, err)
		}
		starters["kafka_canary/"+kc.Name] = s
	}
	for _, rc := range cfg.Redis {
		s, err := plan(m, "redis/"+rc.Name, rc,
			func() (*watch.Watcher[redis.Snapshot], error) { return redis.NewWatcher(rc, m.logger) },
			func(w *watch.Watcher[redis.Snapshot]) {
				m.redis.Set(rc.Name, w)
				events.Follow(m.events, "redis", rc.Name, w, func(s *redis.Snapshot) []events.Event { return s.Events.All() })
			},
			func() { m.redis.Remove(rc.Name) })
		if err != nil {
			return fmt.Errorf("redis cluster %q: %w", rc.Name, err)
		}
		starters["redis/"+rc.Name] = s
		if !rc.Canary.Enabled {
			continue // the canary writes to the cluster: only when asked
		}
		s, err = plan(m, "redis_canary/"+rc.Name, rc,
			func() (*watch.Watcher[rediscanary.Snapshot], error) { return rediscanary.NewWatcher(rc, m.logger) },
			func(w *watch.Watcher[rediscanary.Snapshot]) {
				m.redisCanary.Set(rc.Name, w)
				// Under the cluster's own system and name, next to its
				// transitions: a lost write belongs in the failover's story.
				events.Follow(m.events, "redis", rc.Name, w, func(s *rediscanary.Snapshot) []events.Event { return s.Events.All() })
			},
			func() { m.redisCanary.Remove(rc.Name) })
		if err != nil {
			return fmt.Errorf("redis cluster %q: canary: %w", rc.Name, err)
		}
		starters["redis_canary/"+rc.Name] = s
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	for key, r := range m.running {
		s, keep := starters[key]
		if keep && s.start == nil {
			continue
		}
		r.cancel()
		<-r.done
		delete(m.running, key)
		if !keep {
			r.remove()
			system, name, _ := strings.Cut(key, "/")
			level.Info(m.logger).Log("msg", "stopped watching cluster", "collector", system, "cluster", name)
		}
	}
	keys := make([]string, 0, len(starters))
	for key := range starters {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	for _, key := range keys {
		s := starters[key]
		if s.start == nil {
			continue
		}
		ctx, cancel := context.WithCancel(context.Background())
		ready, done := s.start(ctx)
		m.running[key] = &running{fingerprint: s.fingerprint, cancel: cancel, done: done, ready: ready, remove: s.remove}
		system, name, _ := strings.Cut(key, "/")
		level.Info(m.logger).Log("msg", "watching cluster", "collector", system, "cluster", name)
	}
	return nil
}

func (m *Manager) current(key string) (*running, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.running[key]
	return r, ok
}

// Ready reports whether every watcher has finished its first refresh.
func (m *Manager) Ready() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.running {
		select {
		case <-r.ready:
		default:
			return false
		}
	}
	return true
}

// Stop stops every watcher and waits for them.
func (m *Manager) Stop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for key, r := range m.running {
		r.cancel()
		<-r.done
		delete(m.running, key)
	}
}
