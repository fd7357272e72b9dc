package rediscanary

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
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/redis/rueidis"

	"github.com/failover-exporter/failover_exporter/collector/canary"
	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/systems/redis/proto"
	"github.com/failover-exporter/failover_exporter/systems/redis/settings"
)

// clientName is how the canary's connections show up in CLIENT LIST,
// apart from the watcher's.
const clientName = "failover_exporter_canary"

// source owns the canary's connections and the state of its keys. Only
// the watcher's goroutine calls round, so the state needs no lock; the
// client map is locked because a round's writes run concurrently.
type source struct {
	cfg    settings.Cluster
	option rueidis.ClientOption
	logger log.Logger

	// keys is keyed by key: a key keeps its state across a promotion, since
	// the new master owns the same slot and the same key is chosen.
	keys map[string]*keyState
	// known are the master addresses of the last topology, asked first.
	known []string

	// lease is nil when the config turns the lease off: the canary then
	// always writes. tenure is the hold s.keys belong to: when a new hold
	// begins every key is read again (keyState.reread), since another
	// exporter may have written in between.
	lease  *leaseRunner
	tenure uint64

	mu      sync.Mutex
	clients map[string]rueidis.Client
	closed  bool
}

// keyState is what the canary knows about one of its keys. Every write
// sets the key to acked+1, so the values base+1 .. acked are exactly the
// writes owner acknowledged since the key was last read from a new owner
// (while this exporter held the lease: the key is read again when a new
// hold begins). With the lease, the first read counts what the key held
// as acknowledged too: the previous holder's writes.
type keyState struct {
	key       string
	slot      int
	owner     string // node id of the master the key was last read from; "" before
	ownerAddr string
	base      uint64
	acked     uint64
	// reread is set when a new hold of the lease began: the key is read
	// before the next write even if its owner did not change.
	reread bool
	// ackedAt are the times this exporter sent its acknowledged writes of
	// the key since base, oldest first: the newest, and only those whose
	// TTL may not have run out yet (at most maxTrackedAcks). A key missing
	// on a new master lost the writes among them whose TTL cannot have run
	// out; the others may have expired, and are unverifiable.
	ackedAt []time.Time
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

func newSource(cfg settings.Cluster, logger log.Logger) (*source, error) {
	if len(cfg.Addrs) == 0 {
		return nil, errors.New("no seed addresses")
	}
	if cfg.Canary.Interval <= 0 || cfg.CommandTimeout <= 0 || cfg.Canary.KeyTTL <= 0 {
		return nil, errors.New("canary interval, key TTL and command timeout must be positive; was config.Complete called?")
	}
	option, err := redisproto.ClientOption(cfg)
	if err != nil {
		return nil, err
	}
	option.ClientName = clientName
	s := &source{
		cfg:     cfg,
		option:  option,
		logger:  logger,
		keys:    map[string]*keyState{},
		clients: map[string]rueidis.Client{},
	}
	if cfg.Canary.LeaseEnabled() {
		s.lease = newLeaseRunner(cfg.Canary.Interval, cfg.CommandTimeout)
	}
	return s, nil
}

// round reads the topology, then writes every master's key once.
func (s *source) round(ctx context.Context, prev *Snapshot) (*Snapshot, error) {
	slots, err := s.topology(ctx)
	if err != nil {
		return nil, err
	}
	next := prev.clone()
	at := time.Now() // the time of this round's events
	for _, m := range next.Masters {
		m.Key = "" // set again below for masters that still own slots
	}
	if s.lease != nil && s.lease.Tenure() != s.tenure {
		// Another exporter may have written the keys since this one last
		// held the lease: read each again before writing it. A key whose
		// slot changed master meanwhile is still checked against what this
		// exporter saw acknowledged.
		for _, st := range s.keys {
			st.reread = true
		}
		s.tenure = s.lease.Tenure()
	}

	// One key per master that owns slots. A replica promoted in its
	// master's place owns the same slots and so gets the same key, whose
	// state (what the old master acknowledged) carries over to the check.
	wanted := map[string]*keyState{}
	var targets []leaseTarget
	for _, m := range slots.Masters() {
		key, slot, ok := s.chooseKey(m.ID, slots)
		if !ok {
			continue
		}
		st, ok := s.keys[key]
		if !ok {
			st = &keyState{key: key, slot: slot}
		}
		wanted[key] = st
		next.master(m.ID, m.Addr).Key = key
		targets = append(targets, leaseTarget{m.ID, m.Addr, leaseKey(s.cfg.Canary.KeyPrefix, key)})
	}
	s.keys = wanted
	if !s.mayWrite(next, targets) {
		return next, nil
	}

	type result struct {
		st *keyState
		writeResult
	}
	results := make(chan result, len(wanted))
	for _, st := range wanted {
		owner, _ := slots.Owner(st.slot) // chooseKey found it owned
		go func() { results <- result{st, s.writeKey(ctx, st, owner)} }()
	}
	collected := make([]result, 0, len(wanted))
	for range wanted {
		collected = append(collected, <-results)
	}
	sort.Slice(collected, func(i, j int) bool { return collected[i].st.key < collected[j].st.key })
	for _, r := range collected {
		s.apply(next, at, r.st, r.writeResult)
	}
	return next, nil
}

// mayWrite hands the lease the masters of this round and reports whether
// the canary writes this round: it holds the lease, has waited out its
// predecessor, and its key states are of this hold.
func (s *source) mayWrite(next *Snapshot, targets []leaseTarget) bool {
	if s.lease == nil {
		next.Leader = true
		return true
	}
	s.lease.setTargets(targets)
	s.startLease()
	now := time.Now()
	next.Leader = s.lease.Held(now)
	return s.lease.MayWrite(now) && s.lease.Tenure() == s.tenure
}

// writeResult is the outcome of one key's turn in a round.
type writeResult struct {
	owner redisproto.Master
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
func (s *source) writeKey(ctx context.Context, st *keyState, owner redisproto.Master) writeResult {
	res := writeResult{owner: owner}
	client, err := s.client(owner.Addr)
	if err != nil {
		res.errKind, res.err = errorKind(err), err
		return res
	}
	if st.owner != owner.ID || st.reread {
		// Read before writing: the first write to the new owner would
		// overwrite the evidence.
		value, err := s.get(ctx, client, st.key)
		if err != nil {
			res.errKind, res.err = errorKind(err), fmt.Errorf("GET %s: %w", st.key, err)
			return res
		}
		res.read, res.found, res.readAt = true, value, time.Now()
		res.checked = st.owner != "" && st.owner != owner.ID
	}
	next := st.acked + 1
	if res.read {
		next = res.found + 1
	}
	res.wrote = true
	start := time.Now()
	res.sent = start
	if s.lease != nil {
		err = s.fencedSet(ctx, client, st.key, next)
	} else {
		err = s.set(ctx, client, st.key, next)
	}
	res.latency = time.Since(start)
	if isNotLeased(err) {
		res.skipped = true
		return res
	}
	if err != nil {
		res.errKind, res.err = errorKind(err), err
		return res
	}
	res.ok = true
	return res
}

func (s *source) get(ctx context.Context, client rueidis.Client, key string) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CommandTimeout)
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
func (s *source) set(ctx context.Context, client rueidis.Client, key string, value uint64) error {
	cmds := rueidis.Commands{client.B().Set().Key(key).Value(strconv.FormatUint(value, 10)).Px(s.cfg.Canary.KeyTTL).Build()}
	return s.sendWrite(ctx, client, key, cmds)
}

// sendWrite sends a write (SET, or the fenced script) followed, with WAIT
// on, by WAIT in the same round trip, within the command timeout and the
// WAIT's, and reports whether it was acknowledged.
func (s *source) sendWrite(ctx context.Context, client rueidis.Client, key string, cmds rueidis.Commands) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CommandTimeout+s.cfg.Canary.Wait)
	defer cancel()
	if s.cfg.Canary.Wait > 0 {
		cmds = append(cmds, client.B().Wait().Numreplicas(1).Timeout(s.cfg.Canary.Wait.Milliseconds()).Build())
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
func (s *source) apply(next *Snapshot, at time.Time, st *keyState, r writeResult) {
	if r.skipped {
		// Another exporter holds this master's lease key (it took the key
		// while it was free, and gives it back): the key is read again
		// next round, as if this one had not come.
		return
	}
	if r.checked {
		next.Checks++
		lost, unverifiable := s.judge(st, r)
		if unverifiable > 0 {
			next.master(st.owner, st.ownerAddr).Unverifiable += unverifiable
			level.Info(s.logger).Log("msg", "canary key missing on the new master, and its TTL may have run out: acknowledged writes counted unverifiable, not lost",
				"key", st.key, "unverifiable", unverifiable, "old_master", st.owner, "new_master", r.owner.ID, "key_ttl", s.cfg.Canary.KeyTTL)
		}
		if lost > 0 {
			next.master(st.owner, st.ownerAddr).Lost += lost
			next.Events.Add(at, canary.EventAcknowledgedWritesLost, events.NodeSubject(st.owner, st.ownerAddr), "", strconv.FormatUint(lost, 10))
			level.Warn(s.logger).Log("msg", "acknowledged writes lost in a failover", "key", st.key, "lost", lost,
				"old_master", st.owner, "old_address", st.ownerAddr, "acknowledged_up_to", st.acked,
				"new_master", r.owner.ID, "new_address", r.owner.Addr, "found", r.found)
		} else if unverifiable == 0 {
			level.Info(s.logger).Log("msg", "no acknowledged write lost after the slot changed master", "key", st.key,
				"old_master", st.owner, "new_master", r.owner.ID, "acknowledged_up_to", st.acked, "found", r.found)
		}
	}
	switch {
	case r.read && st.reread && st.owner == r.owner.ID:
		// Read again after a new hold began, same owner: the writes this
		// exporter saw acknowledged are still the owner's to keep, and any
		// another exporter had acknowledged since come on top.
		st.acked = max(st.acked, r.found)
		st.reread = false
	case r.read:
		first := st.owner == ""
		st.owner, st.ownerAddr = r.owner.ID, r.owner.Addr
		st.base, st.acked = r.found, r.found
		st.ackedAt = nil
		if first && s.lease != nil {
			// A takeover (or this exporter's restart): the values up to found
			// are writes the master applied for the exporter that held the
			// lease before, acknowledged to it. They are the master's to keep
			// like this exporter's own, so a failover that loses them is
			// counted, not left to a holder that is gone.
			st.base = 0
		}
		st.reread = false
	}
	m := next.master(r.owner.ID, r.owner.Addr)
	m.Attempts++
	if r.ok {
		st.acked++
		st.trackAck(r.sent, at, s.cfg.Canary.KeyTTL)
		m.Acknowledged++
		m.Latency = m.Latency.Observe(r.latency.Seconds())
	} else {
		m.Failures[r.errKind]++
	}
	if r.errKind != m.LastError {
		if r.errKind != "" {
			next.Events.Add(at, canary.EventWriteFailing, events.NodeSubject(r.owner.ID, r.owner.Addr), "", r.errKind)
			level.Warn(s.logger).Log("msg", "canary write failing", "master", r.owner.ID, "address", r.owner.Addr, "error", r.errKind, "err", r.err)
		} else {
			next.Events.Add(at, canary.EventWriteRecovered, events.NodeSubject(r.owner.ID, r.owner.Addr), m.LastError, "")
		}
	}
	m.LastError = r.errKind
}

// judge counts the writes the old master acknowledged (base+1 .. acked)
// that the new master, read at r.readAt, lacks. A key found with a lower
// value lost the writes above it: the key is there, so its TTL had not run
// out. A key missing altogether either lost every write or expired: the
// writes whose TTL cannot have run out by the read are lost (the new
// master would hold at least their value), the others unverifiable.
func (s *source) judge(st *keyState, r writeResult) (lost, unverifiable uint64) {
	if r.found >= st.acked {
		return 0, 0
	}
	if r.found > 0 {
		return st.acked - max(r.found, st.base), 0
	}
	acknowledged := st.acked - st.base
	for _, sent := range st.ackedAt {
		if !mayHaveExpired(sent, r.readAt, s.cfg.Canary.KeyTTL) {
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

// errorKind names an error for the error label: the Redis error code as
// Redis spells it, or timeout, connection, not_replicated, other.
func errorKind(err error) string {
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

// chooseKey finds the canary key of a master: the first hash tag "0",
// "1", ... whose slot the master owns. The search is deterministic, so a
// master's replica that takes over its slots gets the same key.
func (s *source) chooseKey(masterID string, slots *redisproto.SlotMap) (string, int, bool) {
	// 16384 slots and CRC16 spread tags evenly: a master owning one slot is
	// found within a few times 16384 tags.
	for i := range 1 << 20 {
		tag := strconv.Itoa(i)
		slot := redisproto.KeySlot(tag)
		if owner, ok := slots.Owner(slot); ok && owner.ID == masterID {
			return s.cfg.Canary.KeyPrefix + "{" + tag + "}", slot, true
		}
	}
	return "", 0, false
}

// topology asks the known masters and the seeds for CLUSTER NODES and
// CLUSTER INFO at once and merges their answers by the exporter's one
// slot-ownership rule (redisproto.NewSlotMap, the watcher's): members only, and
// per slot the claim with the highest config epoch, as Redis does. A
// master that died still owns its slots until a replica with a higher
// epoch claims them, so writes to it are tried and counted as failures.
// Clients of addresses no answer mentions any more are closed.
func (s *source) topology(ctx context.Context) (*redisproto.SlotMap, error) {
	seen := map[string]bool{}
	var addrs []string
	for _, a := range append(append([]string(nil), s.known...), s.cfg.Addrs...) {
		if !seen[a] {
			seen[a] = true
			addrs = append(addrs, a)
		}
	}
	// A hung node must not hold up the round: take what answered in time.
	wait := min(s.cfg.CommandTimeout, s.cfg.Canary.Interval/4)
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	type answer struct {
		view redisproto.View
		err  error
	}
	answers := make(chan answer, len(addrs))
	for _, addr := range addrs {
		go func() {
			view, err := s.readView(ctx, addr)
			if err != nil {
				err = fmt.Errorf("%s: %w", addr, err)
			}
			answers <- answer{view, err}
		}()
	}
	var views []redisproto.View
	var errs []error
	for range addrs {
		a := <-answers
		if a.err != nil {
			errs = append(errs, a.err)
			continue
		}
		views = append(views, a.view)
	}
	if len(views) == 0 {
		return nil, fmt.Errorf("no node answered CLUSTER NODES: %w", errors.Join(errs...))
	}
	slots, err := redisproto.NewSlotMap(views)
	if err != nil {
		return nil, err
	}
	s.known = s.known[:0]
	for _, m := range slots.Masters() {
		if m.Addr != "" {
			s.known = append(s.known, m.Addr)
		}
	}
	// Every query of this round has returned: no write uses a client yet.
	keep := slices.Clone(s.cfg.Addrs)
	keep = append(keep, redisproto.Addrs(views)...)
	s.dropClientsExcept(keep)
	return slots, nil
}

// readView reads one node's CLUSTER NODES and CLUSTER INFO in one round trip.
func (s *source) readView(ctx context.Context, addr string) (redisproto.View, error) {
	client, err := s.client(addr)
	if err != nil {
		return redisproto.View{}, err
	}
	replies := client.DoMulti(ctx, client.B().ClusterNodes().Build(), client.B().ClusterInfo().Build())
	nodes, err := replies[0].ToString()
	if err != nil {
		return redisproto.View{}, fmt.Errorf("CLUSTER NODES: %w", err)
	}
	info, err := replies[1].ToString()
	if err != nil {
		return redisproto.View{}, fmt.Errorf("CLUSTER INFO: %w", err)
	}
	return redisproto.ParseView(addr, nodes, info)
}

// client returns the canary's connection to one node, dialled the first
// time. The dial happens outside the lock, so that a hung node does not
// hold up the writes to the others. Connections to nodes that left the
// topology are closed by dropClientsExcept.
func (s *source) client(addr string) (rueidis.Client, error) {
	if addr == "" {
		return nil, errors.New("the master has no address")
	}
	s.mu.Lock()
	c, ok := s.clients[addr]
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil, errors.New("canary stopped")
	}
	if ok {
		return c, nil
	}
	option := s.option
	option.InitAddress = []string{addr}
	// With ForceSingleClient rueidis returns a usable client even when the
	// first dial fails; it dials again on the next command.
	c, err := rueidis.NewClient(option)
	if c == nil {
		return nil, fmt.Errorf("connect %s: %w", addr, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		c.Close()
		return nil, errors.New("canary stopped")
	}
	if existing, ok := s.clients[addr]; ok {
		c.Close() // another write dialled it first
		return existing, nil
	}
	s.clients[addr] = c
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", addr, err)
	}
	return c, nil
}

// dropClientsExcept closes the connections to addresses not in keep: nodes
// that left the topology (a pod's IP changes on every restart), as the
// watcher's source does.
func (s *source) dropClientsExcept(keep []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for addr, c := range s.clients {
		if !slices.Contains(keep, addr) {
			delete(s.clients, addr)
			c.Close()
		}
	}
}

// close stops the lease, giving it back if held, and closes every
// connection; the source cannot be used afterwards.
func (s *source) close() {
	if s.lease != nil {
		s.stopLease()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for addr, c := range s.clients {
		c.Close()
		delete(s.clients, addr)
	}
}
