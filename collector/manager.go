// Package collector runs one watcher per configured cluster and keeps the
// set of watchers in line with the configuration across reloads.
package collector

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/failover-exporter/failover_exporter/collector/exposition"
	"github.com/failover-exporter/failover_exporter/collector/kafka"
	"github.com/failover-exporter/failover_exporter/collector/redis"
	"github.com/failover-exporter/failover_exporter/config"
)

// running is one watcher goroutine.
type running struct {
	fingerprint string
	cancel      context.CancelFunc
	done        chan struct{}
	ready       <-chan struct{}
}

// Manager owns the watchers and the collectors that serve them.
type Manager struct {
	logger log.Logger
	kafka  *kafka.Collector
	redis  *redis.Collector

	mu      sync.Mutex
	running map[string]*running
}

// NewManager returns a manager with no clusters.
func NewManager(logger log.Logger) *Manager {
	return &Manager{
		logger:  logger,
		kafka:   kafka.NewCollector(),
		redis:   redis.NewCollector(),
		running: map[string]*running{},
	}
}

// Register adds the collectors that are served through the registry.
// The Kafka collector is not among them: it is served as pre-rendered text
// by TextWriters, because its series are too many for the registry path.
func (m *Manager) Register(reg prometheus.Registerer) error {
	return reg.Register(m.redis)
}

// TextWriters are the collectors served as text after the registry.
func (m *Manager) TextWriters() []exposition.TextWriter {
	return []exposition.TextWriter{m.kafka}
}

// starter builds a watcher for one cluster; it is called only after every
// cluster of a new config has been built successfully.
type starter struct {
	key         string
	fingerprint string
	start       func(ctx context.Context) (ready <-chan struct{}, done chan struct{})
}

// Apply makes the running watchers match cfg: clusters whose settings did
// not change keep running (and keep their transition counters), changed
// ones are restarted, removed ones stopped. If any cluster cannot be set
// up, nothing changes and the error says which.
func (m *Manager) Apply(cfg *config.Config) error {
	starters := map[string]starter{}
	for _, kc := range cfg.Kafka {
		kc := kc
		fp, err := fingerprint(kc)
		if err != nil {
			return err
		}
		key := kafkaPrefix + kc.Name
		s := starter{key: key, fingerprint: fp}
		if r, ok := m.current(key); !ok || r.fingerprint != fp {
			w, err := kafka.NewWatcher(kc, m.logger)
			if err != nil {
				return fmt.Errorf("kafka cluster %q: %w", kc.Name, err)
			}
			s.start = func(ctx context.Context) (<-chan struct{}, chan struct{}) {
				m.kafka.Set(kc.Name, w, kc.PartitionMetricsEnabled())
				done := make(chan struct{})
				go func() { defer close(done); w.Run(ctx) }()
				return w.Ready(), done
			}
		}
		starters[key] = s
	}
	for _, rc := range cfg.Redis {
		rc := rc
		fp, err := fingerprint(rc)
		if err != nil {
			return err
		}
		key := redisPrefix + rc.Name
		s := starter{key: key, fingerprint: fp}
		if r, ok := m.current(key); !ok || r.fingerprint != fp {
			w, err := redis.NewWatcher(rc, m.logger)
			if err != nil {
				return fmt.Errorf("redis cluster %q: %w", rc.Name, err)
			}
			s.start = func(ctx context.Context) (<-chan struct{}, chan struct{}) {
				m.redis.Set(rc.Name, w)
				done := make(chan struct{})
				go func() { defer close(done); w.Run(ctx) }()
				return w.Ready(), done
			}
		}
		starters[key] = s
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
			removeCluster(m, key)
			level.Info(m.logger).Log("msg", "stopped watching cluster", "cluster", key)
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
		m.running[key] = &running{fingerprint: s.fingerprint, cancel: cancel, done: done, ready: ready}
		level.Info(m.logger).Log("msg", "watching cluster", "cluster", key)
	}
	return nil
}

// Watchers are keyed by system and cluster name; names are unique per system.
const (
	kafkaPrefix = "kafka/"
	redisPrefix = "redis/"
)

func removeCluster(m *Manager, key string) {
	if name, ok := strings.CutPrefix(key, kafkaPrefix); ok {
		m.kafka.Remove(name)
	}
	if name, ok := strings.CutPrefix(key, redisPrefix); ok {
		m.redis.Remove(name)
	}
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

// fingerprint identifies a cluster's settings, so that a reload restarts
// only the clusters whose settings changed.
func fingerprint(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("fingerprint config: %w", err)
	}
	return string(b), nil
}
