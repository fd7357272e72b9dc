package kafka

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-kit/log/level"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/failover-exporter/failover_exporter/systems/kafka/client"
	"github.com/failover-exporter/failover_exporter/systems/kafka/settings"
)

// brokerReader runs reads that ask each broker something of its own (its
// log directories, the offsets of the partitions it leads) beside the
// refreshes, never in them: a hung broker would hold a refresh for a whole
// request timeout. A refresh takes the outcome of the read that ended, if
// any, and starts the next one when none runs, so what such a read finds
// is served one refresh late. Its fields belong to the watcher goroutine,
// like the source's.
type brokerReader[T brokerRead] struct {
	// client has the live brokers as its seeds, one connection each; seeds
	// are their addresses, sorted, in the order the client was given them.
	client *kgo.Client
	seeds  []string
	// pending delivers the running read's outcome; nil when none runs.
	pending chan T
	// last is the last read that ended and found something; nil before.
	last *T
	// skipUntil pauses reads after one found that no broker offers what
	// they ask (an older Kafka): brokers gain an API only when upgraded.
	skipUntil time.Time
	// maxVersions caps the client's request versions when a read needs an
	// older one than the newest (nil: franzMaxVersions); read when the
	// client is made.
	maxVersions *kversion.Versions
}

// brokerRead is what a brokerReader's read returns: its findings, and
// how it went.
type brokerRead interface{ outcome() readOutcome }

// readOutcome is how one read of the brokers went.
type readOutcome struct {
	// unsupported is true when brokers answered, none of them with the
	// request version the read needs.
	unsupported bool
	// failed counts the brokers whose request failed; err is one error.
	failed int
	err    error
}

func (o readOutcome) outcome() readOutcome { return o }

// readKind names a brokerReader's reads in the log: kind is the key of
// source.logFailure, and the messages say what is not served.
type readKind struct {
	kind, unsupported, failed string
}

// keep takes the outcome of the read that ended, if one did: it becomes
// last, and what went wrong is logged once (logFailure). A read that found
// no broker offering its request clears last and pauses the reads for
// apiVersionsMaxAge.
func (r *brokerReader[T]) keep(s *source, k readKind) {
	read, ok := r.collect()
	if !ok {
		return
	}
	o := read.outcome()
	switch {
	case o.unsupported:
		r.last = nil
		r.skipUntil = s.now().Add(apiVersionsMaxAge)
		level.Debug(s.logger).Log("msg", k.unsupported)
		return
	case o.err != nil:
		s.logFailure(k.kind, k.failed, o.err, "brokers", o.failed)
	default:
		s.logFailure(k.kind, "", nil)
	}
	r.last = &read
}

// paused reports whether reads pause (keep).
func (r *brokerReader[T]) paused(now time.Time) bool { return now.Before(r.skipUntil) }

// collect returns the outcome of the read that ended since the last call,
// if one did.
func (r *brokerReader[T]) collect() (T, bool) {
	var none T
	if r.pending == nil {
		return none, false
	}
	select {
	case read := <-r.pending:
		r.pending = nil
		return read, true
	default:
		return none, false
	}
}

// running reports whether a read runs.
func (r *brokerReader[T]) running() bool { return r.pending != nil }

// start runs read on its own goroutine with a handle for each of brokers
// (ID to address), unless a read runs. read must end by itself: each of
// its requests bounded by a timeout.
func (r *brokerReader[T]) start(cfg settings.Cluster, brokers map[int32]string, read func(handles map[int32]*kgo.Broker) T) error {
	if r.pending != nil || len(brokers) == 0 {
		return nil
	}
	seeds := make([]string, 0, len(brokers))
	for _, addr := range brokers {
		seeds = append(seeds, addr)
	}
	slices.Sort(seeds)
	seeds = slices.Compact(seeds)
	switch {
	case r.client == nil:
		_, security, err := kafkaclient.Configs(cfg)
		if err != nil {
			return err
		}
		versions := franzMaxVersions()
		if r.maxVersions != nil {
			versions = kgo.MaxVersions(r.maxVersions)
		}
		client, err := kgo.NewClient(append(security, versions, kgo.SeedBrokers(seeds...))...)
		if err != nil {
			return fmt.Errorf("kafka client config: %w", err)
		}
		r.client, r.seeds = client, seeds
	case !slices.Equal(seeds, r.seeds):
		// No read runs: nothing uses the seeds this replaces.
		if err := r.client.UpdateSeedBrokers(seeds...); err != nil {
			return fmt.Errorf("franz-go seeds %s: %w", strings.Join(seeds, ","), err)
		}
		r.seeds = seeds
	}
	// SeedBrokers keeps the order the seeds were given in.
	byAddr := make(map[string]*kgo.Broker, len(seeds))
	for i, b := range r.client.SeedBrokers() {
		if i < len(seeds) {
			byAddr[seeds[i]] = b
		}
	}
	handles := make(map[int32]*kgo.Broker, len(brokers))
	for id, addr := range brokers {
		if b, ok := byAddr[addr]; ok {
			handles[id] = b
		}
	}
	pending := make(chan T, 1)
	r.pending = pending
	go func() { pending <- read(handles) }()
	return nil
}

// liveLeaders splits the leaders of byLeader into those handles has a
// broker for, and an outcome that counts each other one as a failed
// broker: its partitions (partitions counts them, what names them) cannot
// be asked.
func liveLeaders[V any](handles map[int32]*kgo.Broker, byLeader map[int32]V, partitions func(V) int, what string) (map[int32]*kgo.Broker, readOutcome) {
	leaders := make(map[int32]*kgo.Broker, len(byLeader))
	var missing readOutcome
	for id, v := range byLeader {
		if broker, ok := handles[id]; ok {
			leaders[id] = broker
			continue
		}
		missing.failed++
		missing.err = fmt.Errorf("leader %d of %d %s is not a live broker", id, partitions(v), what)
	}
	return leaders, missing
}

// plus adds other's failures to o's; o's error is kept if it has one.
func (o readOutcome) plus(other readOutcome) readOutcome {
	o.failed += other.failed
	if o.err == nil {
		o.err = other.err
	}
	return o
}

// askBrokers asks each of handles at once, each request bounded by
// timeout, and says how they answered. ask returns an error, or whether
// the broker's answer had a version that tells what the read asks
// (supported), and keep, which records what it found: askBrokers calls
// keep under a lock, so that ask's findings go into one read.
func askBrokers(handles map[int32]*kgo.Broker, timeout time.Duration,
	ask func(ctx context.Context, id int32, broker *kgo.Broker) (keep func(), supported bool, err error),
) readOutcome {
	var o readOutcome
	var mu sync.Mutex
	var wg sync.WaitGroup
	answered, old := 0, 0
	for id, broker := range handles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			keep, supported, err := ask(ctx, id, broker)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				o.failed++
				o.err = err
			case !supported:
				answered++
				old++
			default:
				answered++
				if keep != nil {
					keep()
				}
			}
		}()
	}
	wg.Wait()
	o.unsupported = answered > 0 && old == answered
	return o
}

// close ends the reader: its client, once the running read ended.
func (r *brokerReader[T]) close() {
	client, pending := r.client, r.pending
	r.client, r.pending = nil, nil
	if client == nil {
		return
	}
	if pending == nil {
		client.Close()
		return
	}
	go func() {
		<-pending
		client.Close()
	}()
}
