// Package keycanary is the engine of Redis's write canaries, shared by
// the Redis Cluster canary (systems/redis/canary) and the Sentinel canary
// (systems/sentinel/canary): one key per master, SET with the next value
// every round (optionally followed by WAIT), and, when the key's master
// changes, a read of the key from the new master before the next write,
// to count the writes the old one acknowledged that the new one does not
// have. The lease (lease.go) lets several exporters of one deployment
// share it. Each canary finds its masters its own way (slot owners, or
// the master the sentinels name) and hands the engine a Target per key.
//
// engine.go owns the canary's connections and runs one round; snapshot.go
// is what a round publishes; lease.go is the lease.
package keycanary

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/redis/rueidis"

	"github.com/failover-exporter/failover_exporter/collector/canary"
	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/systems/redis/settings"
)

// ClientName is how the canary's connections show up in CLIENT LIST,
// apart from the watcher's.
const ClientName = "failover_exporter_canary"

// Target is one canary key and the master that holds it now.
type Target struct {
	// Key is the canary key.
	Key string
	// Owner names the master holding the key now, as the node itself is
	// known (Redis Cluster's node id, a Sentinel master's run id): when it
	// changes the key is read before the next write, and the writes the
	// previous owner acknowledged are checked.
	Owner string
	// ID keys the master's counters in the snapshot (Snapshot.Masters): the
	// node id, or a Sentinel master's address.
	ID   string
	Addr string
	// Set is the Sentinel master name the key belongs to; "" for Redis
	// Cluster. Events about a set name it.
	Set string
}

// subject is what the events of a target are about.
func (t Target) subject() events.Subject {
	if t.Set != "" {
		return events.Subject{NodeID: t.Set, Address: t.Addr}
	}
	return events.NodeSubject(t.ID, t.Addr)
}

// Engine owns a canary's connections to the data nodes and the state of
// its keys. Only the watcher's goroutine calls Round, so the state needs
// no lock; the connections (Clients) are shared by a round's concurrent
// writes, the lease's attempts and the canary's reads of its topology.
type Engine struct {
	canary         settings.Canary
	commandTimeout time.Duration
	logger         log.Logger

	// keys is keyed by key: a key keeps its state across a promotion, since
	// the new master gets the same key.
	keys map[string]*keyState

	// lease is nil when the config turns the lease off: the canary then
	// always writes. tenure is the hold s.keys belong to: when a new hold
	// begins every key is read again (keyState.reread), since another
	// exporter may have written in between.
	lease  *leaseRunner
	tenure uint64

	clients *Clients
}

// keyState is what the canary knows about one of its keys. Every write
// sets the key to acked+1, so the values base+1 .. acked are exactly the
// writes holder acknowledged since the key was last read from a new owner
// (while this exporter held the lease: the key is read again when a new
// hold begins). With the lease, the first read counts what the key held
// as acknowledged too: the previous holder's writes.
type keyState struct {
	key string
	// holder is the master the key was last read from (Owner "" before).
	holder Target
	base   uint64
	acked  uint64
	// reread is set when a new hold of the lease began: the key is read
	// before the next write even if its owner did not change.
	reread bool
	// ackedAt are the times this exporter sent its acknowledged writes of
	// the key since base, oldest first: the newest, and only those whose
	// TTL may not have run out yet (at most maxTrackedAcks). A key missing
	// on a new master lost the writes among them whose TTL cannot have run
	// out; the others may have expired, and are unverifiable.
	ackedAt []time.Time
	// lastAck is when the last acknowledged write of the key was
	// acknowledged, and lastAckBy the master that did; stalled is set when
	// a write failed since (the stall clock, stallClock).
	lastAck   time.Time
	lastAckBy Target
	stalled   bool
}

// maxTrackedAcks bounds keyState.ackedAt: a key_ttl of hours at a short
// interval would keep thousands of times. Writes past it count as ones
// that may have expired: unverifiable, never lost.
const maxTrackedAcks = 4096

// expiryMargin is how much earlier than its TTL says the canary deems a
// key possibly expired, for the clocks: the TTL runs on the masters'
// clocks (a replica applies the master's absolute expiry, Redis 7), the
// write times on the exporter's. A second plus a hundredth of the TTL
// covers clocks kept by NTP and the time a write takes to reach Redis.
func expiryMargin(keyTTL time.Duration) time.Duration {
	return time.Second + keyTTL/100
}

// mayHaveExpired reports whether a write sent at sent may have expired by
// now: the key's TTL, less the margin, has run out.
func mayHaveExpired(sent, now time.Time, keyTTL time.Duration) bool {
	return !sent.Add(keyTTL - expiryMargin(keyTTL)).After(now)
}

// New returns the engine of a canary whose settings are c (completed by
// the config), sending each command within commandTimeout, dialling the
// data nodes with option (its ClientName is set to ClientName).
func New(c settings.Canary, commandTimeout time.Duration, option rueidis.ClientOption, logger log.Logger) (*Engine, error) {
	if c.Interval <= 0 || commandTimeout <= 0 || c.KeyTTL <= 0 {
		return nil, errors.New("canary interval, key TTL and command timeout must be positive; was config.Complete called?")
	}
	option.ClientName = ClientName
	e := &Engine{
		canary:         c,
		commandTimeout: commandTimeout,
		logger:         logger,
		keys:           map[string]*keyState{},
		clients:        NewClients(option),
	}
	if c.LeaseEnabled() {
		e.lease = newLeaseRunner(c.Interval, commandTimeout)
	}
	return e, nil
}

// Round writes every target's key once, reading it first from a master
// that did not hold it before, and returns prev's counters updated. A
// target is one key and its master now; a key not among targets is
// forgotten (its master no longer holds one), and a master's counters
// stay (its lost writes are counted after it is gone).
func (e *Engine) Round(ctx context.Context, prev *Snapshot, targets []Target) *Snapshot {
	next := prev.clone()
	at := time.Now() // the time of this round's events
	for _, m := range next.Masters {
		m.Key = "" // set again below for masters that hold a key
	}
	if e.lease != nil && e.lease.Tenure() != e.tenure {
		// Another exporter may have written the keys since this one last
		// held the lease: read each again before writing it. A key whose
		// master changed meanwhile is still checked against what this
		// exporter saw acknowledged.
		for _, st := range e.keys {
			st.reread = true
		}
		e.tenure = e.lease.Tenure()
	}

	// A replica promoted in its master's place gets the same key, whose
	// state (what the old master acknowledged) carries over to the check.
	wanted := map[string]*keyState{}
	owners := map[string]Target{}
	var leased []leaseTarget
	for _, tg := range targets {
		st, ok := e.keys[tg.Key]
		if !ok {
			st = &keyState{key: tg.Key}
		}
		wanted[tg.Key] = st
		owners[tg.Key] = tg
		next.master(tg).Key = tg.Key
		leased = append(leased, leaseTarget{tg.ID, tg.Addr, LeaseKey(e.canary.KeyPrefix, tg.Key)})
	}
	e.keys = wanted
	if !e.mayWrite(next, leased) {
		return next
	}

	type result struct {
		st *keyState
		writeResult
	}
	results := make(chan result, len(wanted))
	for key, st := range wanted {
		owner := owners[key]
		go func() { results <- result{st, e.writeKey(ctx, st, owner)} }()
	}
	collected := make([]result, 0, len(wanted))
	for range wanted {
		collected = append(collected, <-results)
	}
	sort.Slice(collected, func(i, j int) bool { return collected[i].st.key < collected[j].st.key })
	for _, r := range collected {
		e.apply(next, at, r.st, r.writeResult)
	}
	return next
}

// mayWrite hands the lease the masters of this round and reports whether
// the canary writes this round: it holds the lease, has waited out its
// predecessor, and its key states are of this hold.
func (e *Engine) mayWrite(next *Snapshot, targets []leaseTarget) bool {
	if e.lease == nil {
		next.Leader = true
		return true
	}
	e.lease.setTargets(targets)
	e.startLease()
	now := time.Now()
	next.Leader = e.lease.Held(now)
	return e.lease.MayWrite(now) && e.lease.Tenure() == e.tenure
}

// writeResult is the outcome of one key's turn in a round.
type writeResult struct {
	owner Target
	// checked is set when the key was read from a new owner; found is the
	// value read.
	checked bool
	found   uint64
	// read is set when the key was read at all (first sight or new owner);
	// readAt is when its reply came.
	read   bool
	readAt time.Time
	// wrote is set when a SET was attempted; ok when it was acknowledged.
	wrote   bool
	ok      bool
	sent    time.Time
	latency time.Duration
	errKind string
	err     error
	// skipped is set when the fenced write found the master's lease key
	// another exporter's: nothing happened, nothing is counted.
	skipped bool
}

// writeKey reads the key from its owner when the owner changed (or the key
// is new), then writes the next value. It runs concurrently for different
// keys and does not touch shared state.
func (e *Engine) writeKey(ctx context.Context, st *keyState, owner Target) writeResult {
	res := writeResult{owner: owner}
	client, err := e.Client(owner.Addr)
	if err != nil {
		res.errKind, res.err = ErrorKind(err), err
		return res
	}
	if st.holder.Owner != owner.Owner || st.reread {
		// Read before writing: the first write to the new owner would
		// overwrite the evidence.
		value, err := e.get(ctx, client, st.key)
		if err != nil {
			res.errKind, res.err = ErrorKind(err), fmt.Errorf("GET %s: %w", st.key, err)
			return res
		}
		res.read, res.found, res.readAt = true, value, time.Now()
		res.checked = st.holder.Owner != "" && st.holder.Owner != owner.Owner
	}
	next := st.acked + 1
	if res.read {
		next = res.found + 1
	}
	res.wrote = true
	start := time.Now()
	res.sent = start
	if e.lease != nil {
		err = e.fencedSet(ctx, client, st.key, next)
	} else {
		err = e.set(ctx, client, st.key, next)
	}
	res.latency = time.Since(start)
	if isNotLeased(err) {
		res.skipped = true
		return res
	}
	if err != nil {
		res.errKind, res.err = ErrorKind(err), err
		return res
	}
	res.ok = true
	return res
}

func (e *Engine) get(ctx context.Context, client rueidis.Client, key string) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, e.commandTimeout)
	defer cancel()
	reply, err := client.Do(ctx, client.B().Get().Key(key).Build()).ToString()
	if rueidis.IsRedisNil(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	value, err := strconv.ParseUint(reply, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("value %q is not the canary's: %w", reply, err)
	}
	return value, nil
}

// errNotReplicated is a write the master took but no replica confirmed
// within the WAIT timeout: not acknowledged.
var errNotReplicated = errors.New("WAIT: no replica confirmed the write in time")

// set writes value with the key's TTL and, with WAIT on, waits for a
// replica, in one round trip.
func (e *Engine) set(ctx context.Context, client rueidis.Client, key string, value uint64) error {
	cmds := rueidis.Commands{client.B().Set().Key(key).Value(strconv.FormatUint(value, 10)).Px(e.canary.KeyTTL).Build()}
	return e.sendWrite(ctx, client, key, cmds)
}

// sendWrite sends a write (SET, or the fenced script) followed, with WAIT
// on, by WAIT in the same round trip, within the command timeout and the
// WAIT's, and reports whether it was acknowledged.
func (e *Engine) sendWrite(ctx context.Context, client rueidis.Client, key string, cmds rueidis.Commands) error {
	ctx, cancel := context.WithTimeout(ctx, e.commandTimeout+e.canary.Wait)
	defer cancel()
	if e.canary.Wait > 0 {
		cmds = append(cmds, client.B().Wait().Numreplicas(1).Timeout(e.canary.Wait.Milliseconds()).Build())
	}
	replies := client.DoMulti(ctx, cmds...)
	if err := replies[0].Error(); err != nil {
		return fmt.Errorf("SET %s: %w", key, err)
	}
	if len(replies) > 1 {
		replicas, err := replies[1].AsInt64()
		if err != nil {
			return fmt.Errorf("WAIT: %w", err)
		}
		if replicas < 1 {
			return errNotReplicated
		}
	}
	return nil
}

// apply adds one key's outcome to the snapshot, with events for what
// changed. The event log logs each event once; the warn lines here stay
// for what the events do not carry: the error's text (docs/canary.md and
// the e2e tests point users at it) and the key, values and new master of
// a loss (the runbook does).
func (e *Engine) apply(next *Snapshot, at time.Time, st *keyState, r writeResult) {
	if r.skipped {
		// Another exporter holds this master's lease key (it took the key
		// while it was free, and gives it back): the key is read again
		// next round, as if this one had not come.
		return
	}
	if r.checked {
		next.Checks++
		old := st.holder
		lost, unverifiable := e.judge(st, r)
		if unverifiable > 0 {
			next.master(old).Unverifiable += unverifiable
			level.Info(e.logger).Log("msg", "canary key missing on the new master, and its TTL may have run out: acknowledged writes counted unverifiable, not lost",
				"key", st.key, "unverifiable", unverifiable, "old_master", old.ID, "new_master", r.owner.ID, "key_ttl", e.canary.KeyTTL)
		}
		if lost > 0 {
			next.master(old).Lost += lost
			next.Events.Add(at, canary.EventAcknowledgedWritesLost, old.subject(), "", strconv.FormatUint(lost, 10))
			level.Warn(e.logger).Log("msg", "acknowledged writes lost in a failover", "key", st.key, "lost", lost,
				"old_master", old.ID, "old_address", old.Addr, "acknowledged_up_to", st.acked,
				"new_master", r.owner.ID, "new_address", r.owner.Addr, "found", r.found)
		} else if unverifiable == 0 {
			level.Info(e.logger).Log("msg", "no acknowledged write lost after the key changed master", "key", st.key,
				"old_master", old.ID, "new_master", r.owner.ID, "acknowledged_up_to", st.acked, "found", r.found)
		}
	}
	if r.read && r.found > st.acked {
		// Another exporter wrote the key since this one last did (it held
		// the lease meanwhile): a stall this one saw begin may have ended
		// on its writes, so it is not timed.
		st.lastAck, st.stalled = time.Time{}, false
	}
	switch {
	case r.read && st.reread && st.holder.Owner == r.owner.Owner:
		// Read again after a new hold began, same owner: the writes this
		// exporter saw acknowledged are still the owner's to keep, and any
		// another exporter had acknowledged since come on top.
		st.acked = max(st.acked, r.found)
		st.holder = r.owner
		st.reread = false
	case r.read:
		first := st.holder.Owner == ""
		st.holder = r.owner
		st.base, st.acked = r.found, r.found
		st.ackedAt = nil
		if first && e.lease != nil {
			// A takeover (or this exporter's restart): the values up to found
			// are writes the master applied for the exporter that held the
			// lease before, acknowledged to it. They are the master's to keep
			// like this exporter's own, so a failover that loses them is
			// counted, not left to a holder that is gone.
			st.base = 0
		}
		st.reread = false
	}
	e.stallClock(next, st, r)
	m := next.master(r.owner)
	m.Attempts++
	if r.ok {
		st.acked++
		st.trackAck(r.sent, at, e.canary.KeyTTL)
		m.Acknowledged++
		m.Latency = m.Latency.Observe(r.latency.Seconds())
	} else {
		m.Failures[r.errKind]++
	}
	if r.errKind != m.LastError {
		if r.errKind != "" {
			next.Events.Add(at, canary.EventWriteFailing, r.owner.subject(), "", r.errKind)
			level.Warn(e.logger).Log("msg", "canary write failing", "master", r.owner.ID, "address", r.owner.Addr, "error", r.errKind, "err", r.err)
		} else {
			next.Events.Add(at, canary.EventWriteRecovered, r.owner.subject(), m.LastError, "")
		}
	}
	m.LastError = r.errKind
}

// stallClock runs the clients' stall clock of st's key: a failed write
// after an acknowledged one starts a stall, dated from that
// acknowledgement; the next acknowledged write ends it, observed for the
// master that acknowledged the last write before (the one whose loss or
// trouble began the stall). A failure before any acknowledgement this
// exporter saw (it started during an outage, or took the lease) dates
// nothing, and so does one across another exporter's writes (apply).
func (e *Engine) stallClock(next *Snapshot, st *keyState, r writeResult) {
	if !r.ok {
		st.stalled = st.stalled || !st.lastAck.IsZero()
		return
	}
	acked := r.sent.Add(r.latency)
	if st.stalled {
		m := next.master(st.lastAckBy)
		m.Stalls = m.Stalls.ObserveDuration(acked.Sub(st.lastAck))
		st.stalled = false
	}
	st.lastAck, st.lastAckBy = acked, r.owner
}

// judge counts the writes the old master acknowledged (base+1 .. acked)
// that the new master, read at r.readAt, lacks. A key found with a lower
// value lost the writes above it: the key is there, so its TTL had not run
// out. A key missing altogether either lost every write or expired: the
// writes whose TTL cannot have run out by the read are lost (the new
// master would hold at least their value), the others unverifiable.
func (e *Engine) judge(st *keyState, r writeResult) (lost, unverifiable uint64) {
	if r.found >= st.acked {
		return 0, 0
	}
	if r.found > 0 {
		return st.acked - max(r.found, st.base), 0
	}
	acknowledged := st.acked - st.base
	for _, sent := range st.ackedAt {
		if !mayHaveExpired(sent, r.readAt, e.canary.KeyTTL) {
			lost++
		}
	}
	lost = min(lost, acknowledged)
	return lost, acknowledged - lost
}

// trackAck records the time of an acknowledged write, and forgets those
// that may have expired by now (they would be unverifiable at any later
// check) and those past maxTrackedAcks.
func (st *keyState) trackAck(sent, now time.Time, keyTTL time.Duration) {
	st.ackedAt = append(st.ackedAt, sent)
	drop := 0
	for drop < len(st.ackedAt) && mayHaveExpired(st.ackedAt[drop], now, keyTTL) {
		drop++
	}
	drop = max(drop, len(st.ackedAt)-maxTrackedAcks)
	if drop > 0 {
		st.ackedAt = slices.Clone(st.ackedAt[drop:])
	}
}

// redisErrorCode is the first word of a Redis error reply (NOPERM, MOVED,
// CLUSTERDOWN, READONLY, OOM, NOREPLICAS, ...).
var redisErrorCode = regexp.MustCompile(`^[A-Z][A-Z_]{1,30}$`)

// ErrorKind names an error for the error label: the Redis error code as
// Redis spells it, or timeout, connection, not_replicated, other.
func ErrorKind(err error) string {
	if errors.Is(err, errNotReplicated) {
		return "not_replicated"
	}
	var rerr *rueidis.RedisError
	if errors.As(err, &rerr) {
		word, _, _ := cutWord(rerr.Error())
		if redisErrorCode.MatchString(word) {
			return word
		}
		return "other"
	}
	var netErr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return "timeout"
	case errors.As(err, &netErr), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, rueidis.ErrClosing):
		return "connection"
	}
	return "other"
}

func cutWord(s string) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// Client returns the canary's connection to one node, dialled the first
// time; the canaries read their topology through it too.
func (e *Engine) Client(addr string) (rueidis.Client, error) { return e.clients.Get(addr) }

// DropClientsExcept closes the connections to addresses not in keep: nodes
// that left the topology, as the watchers' sources do. Call it between
// rounds, with no write under way.
func (e *Engine) DropClientsExcept(keep []string) { e.clients.DropExcept(keep) }

// Close stops the lease, giving it back if held, and closes every
// connection; the engine cannot be used afterwards.
func (e *Engine) Close() {
	if e.lease != nil {
		e.stopLease()
	}
	e.clients.Close()
}
