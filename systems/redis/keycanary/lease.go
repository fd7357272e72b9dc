package keycanary

import (
	"context"
	cryptorand "crypto/rand"
	"encoding/hex"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-kit/log/level"
	"github.com/redis/rueidis"

	"github.com/failover-exporter/failover_exporter/collector/canary/lease"
)

// The canary lease: which of the exporters of one cluster (or Sentinel
// deployment) writes its canary keys. It lives in the cluster, as one
// lease key per master beside that master's canary key (PREFIXlease{N}
// beside PREFIX{N}, in the same slot in Redis Cluster):
//
//   - An exporter holds the lease while a majority of the masters that hold
//     a canary key hold its token. In a cluster of several masters, a master
//     that dies or fails over is a minority, so the lease survives exactly
//     the failures the canary measures; a holder cut off from most masters
//     loses it. A Sentinel deployment watching one master set has one
//     master: its failover ends the hold, and the next hold begins on the
//     promoted replica after the wait below (docs/canary.md).
//   - Every canary write is fenced on its master: one script checks that
//     the master's lease key holds the writer's token (taking it if free)
//     and only then sets the canary key. A holder that lost the lease while
//     paused cannot land a write on a master another exporter holds, even
//     if it sends one before its clock tells it to stop.
//   - The clock rules of package lease: a grant is good for ttl after it was
//     sent, and a new holder waits one ttl before writing, which covers a
//     lease key lost early (a failover to a replica without it).
//
// ttl is a third of the canary interval and the lease is attempted four
// times per ttl, so after a holder dies the lease moves within ttl and an
// attempt, and the successor's first write comes at its first round after
// one more ttl: within two intervals.

// Scripts, run with EVAL (pipelined with WAIT, and one command to allow).
// KEYS[1] is always the master's lease key; ARGV[1] the exporter's token.
const (
	// holdScript takes the lease key if it is free or extends it if it is
	// ours: 1 granted, 0 another exporter's. ARGV[2]: ttl in ms.
	holdScript = `local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then redis.call('PEXPIRE', KEYS[1], ARGV[2]) return 1 end
if not v then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 1 end
return 0`
	// releaseScript deletes the lease key if it is ours.
	releaseScript = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`
	// fencedSetScript sets the canary key KEYS[2] to ARGV[2] with a ttl of
	// ARGV[3] ms only if the lease key is ours, taking it for ARGV[4] ms if
	// it is free.
	fencedSetScript = `local v = redis.call('GET', KEYS[1])
if not v then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[4])
elseif v ~= ARGV[1] then return redis.error_reply('` + notLeased + ` the canary lease of this master belongs to another exporter') end
return redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])`
	// notLeased is the error code of a fenced write refused: not a failure
	// of the master, so not counted as one.
	notLeased = "NOTLEASED"
)

// minLeaseTTL bounds the lease's ttl from below, for canary intervals
// under a second.
const minLeaseTTL = 300 * time.Millisecond

// LeaseKey is the lease key beside a canary key: same hash tag, same slot
// in Redis Cluster.
func LeaseKey(prefix, canaryKey string) string {
	return prefix + "lease" + strings.TrimPrefix(canaryKey, prefix)
}

// leaseTarget is one master's lease key.
type leaseTarget struct {
	id, addr, key string
}

// leaseRunner attempts the lease on its own schedule, apart from the
// rounds, against the masters the last round found.
type leaseRunner struct {
	*lease.Lease
	token  string
	period time.Duration
	// timeout bounds one attempt: an attempt that waited on a hung master
	// would be sent, and dated, too early for the next.
	timeout time.Duration

	// lastError is the error kind of the last attempt's first failure,
	// "" when every master answered: a change is logged, so that a user
	// without permission to run the lease script is told once.
	lastError string

	attempts lease.Attempts

	mu      sync.Mutex
	targets []leaseTarget
}

func newLeaseRunner(interval, commandTimeout time.Duration) *leaseRunner {
	// At least minLeaseTTL: a lease of a few tens of milliseconds is lost to
	// any slow attempt (a loaded machine, a GC pause), and each loss makes
	// the next holder wait.
	ttl := max(interval/3, minLeaseTTL)
	// Four attempts per ttl, so that one or two slow ones do not cost the
	// hold; each bounded by the time to the next.
	period := ttl / 4
	var b [16]byte
	_, _ = cryptorand.Read(b[:]) // never fails (crypto/rand)
	return &leaseRunner{
		Lease:   lease.New(ttl, ttl),
		token:   hex.EncodeToString(b[:]),
		period:  period,
		timeout: min(commandTimeout, period),
	}
}

// setTargets replaces the masters the lease is held on.
func (r *leaseRunner) setTargets(targets []leaseTarget) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.targets = targets
}

func (r *leaseRunner) currentTargets() []leaseTarget {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.targets
}

// startLease runs the attempts until stopLease, once; the first round
// calls it, so that the source does no I/O before it runs.
func (e *Engine) startLease() {
	r := e.lease
	_ = r.attempts.Start(nil, func(ctx context.Context) { // no setup to fail
		for {
			e.attemptLease(ctx)
			// Jittered: two exporters that split the masters' votes both give
			// theirs back, and must not retry in step.
			timer := time.NewTimer(r.period/2 + rand.N(r.period/2))
			select {
			case <-ctx.Done():
				timer.Stop()
				return
			case <-timer.C:
			}
		}
	})
}

// stopLease stops the attempts and, if the lease is held, gives its keys
// back, so that another exporter takes over at its next attempt (a
// rolling restart) rather than after the keys expire.
func (e *Engine) stopLease() {
	r := e.lease
	if !r.attempts.Stop() || !r.Held(time.Now()) {
		return
	}
	ctx, cancelRelease := context.WithTimeout(context.Background(), r.timeout)
	defer cancelRelease()
	e.releaseLease(ctx, r.currentTargets(), nil)
	level.Info(e.logger).Log("msg", "canary lease given back on stop")
}

// attemptLease asks every master to grant the lease and records whether a
// majority did. A candidate that won no majority gives back what it won,
// so that a split vote leaves the keys free for the next attempt.
func (e *Engine) attemptLease(ctx context.Context) {
	r := e.lease
	targets := r.currentTargets()
	if len(targets) == 0 {
		return
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	sent := time.Now()
	ttl := strconv.FormatInt(r.TTL().Milliseconds(), 10)
	granted := make([]bool, len(targets))
	errs := make([]error, len(targets))
	var wg sync.WaitGroup
	for i, tg := range targets {
		wg.Go(func() {
			client, err := e.Client(tg.addr)
			if err != nil {
				errs[i] = err
				return
			}
			n, err := client.Do(ctx, client.B().Eval().Script(holdScript).Numkeys(1).Key(tg.key).Arg(r.token, ttl).Build()).AsInt64()
			granted[i], errs[i] = err == nil && n == 1, err
		})
	}
	wg.Wait()
	if parent.Err() != nil {
		// Stopped (a stop or a reload) while the masters were asked: the
		// errors are the cancellation's, not the masters' answers, and
		// nothing is recorded or logged.
		return
	}
	e.logLeaseErrors(targets, errs)
	votes := 0
	for _, g := range granted {
		if g {
			votes++
		}
	}
	majority := votes*2 > len(targets)
	held, changed := r.Record(sent, majority)
	if !held && votes > 0 {
		e.releaseLease(ctx, targets, granted)
	}
	if changed {
		msg := "canary lease taken: this exporter writes the canary after waiting out the previous holder"
		if !held {
			msg = "canary lease lost: this exporter stops writing the canary"
		}
		level.Info(e.logger).Log("msg", msg, "masters_granting", votes, "masters", len(targets), "lease_ttl", r.TTL())
	}
}

// logLeaseErrors logs when the masters' answers to the lease start or stop
// failing, with the first failure: a refusal (NOPERM: the user may not run
// EVAL) leaves the canary writing nothing, and must say why.
func (e *Engine) logLeaseErrors(targets []leaseTarget, errs []error) {
	kind, i := "", slices.IndexFunc(errs, func(err error) bool { return err != nil })
	if i >= 0 {
		kind = ErrorKind(errs[i])
	}
	if kind == e.lease.lastError {
		return
	}
	e.lease.lastError = kind
	if kind == "" {
		level.Info(e.logger).Log("msg", "canary lease attempts answered by every master again")
		return
	}
	msg := "canary lease attempt failing; without the lease this exporter writes no canary"
	if kind == "NOPERM" {
		msg += " (docs/canary.md: the ACL needs +eval, or set canary.lease: false on a lone exporter)"
	}
	level.Warn(e.logger).Log("msg", msg, "master", targets[i].id, "address", targets[i].addr, "error", kind, "err", errs[i])
}

// releaseLease deletes the lease keys that are ours: those granted, or
// all when granted is nil.
func (e *Engine) releaseLease(ctx context.Context, targets []leaseTarget, granted []bool) {
	var wg sync.WaitGroup
	for i, tg := range targets {
		if granted != nil && !granted[i] {
			continue
		}
		wg.Go(func() {
			if client, err := e.Client(tg.addr); err == nil {
				_ = client.Do(ctx, client.B().Eval().Script(releaseScript).Numkeys(1).Key(tg.key).Arg(e.lease.token).Build()).Error()
			}
		})
	}
	wg.Wait()
}

// fencedSet is set for a canary that holds the lease: the write lands only
// if the master's lease key is ours.
func (e *Engine) fencedSet(ctx context.Context, client rueidis.Client, key string, value uint64) error {
	cmds := rueidis.Commands{client.B().Eval().Script(fencedSetScript).Numkeys(2).
		Key(LeaseKey(e.canary.KeyPrefix, key), key).
		Arg(e.lease.token, strconv.FormatUint(value, 10), strconv.FormatInt(e.canary.KeyTTL.Milliseconds(), 10), strconv.FormatInt(e.lease.TTL().Milliseconds(), 10)).
		Build()}
	return e.sendWrite(ctx, client, key, cmds)
}

// isNotLeased reports a fenced write refused because another exporter
// holds the master's lease key.
func isNotLeased(err error) bool {
	return err != nil && ErrorKind(err) == notLeased
}
