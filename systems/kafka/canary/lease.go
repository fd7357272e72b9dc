package kafkacanary

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/failover-exporter/failover_exporter/collector/canary/lease"
	"github.com/failover-exporter/failover_exporter/systems/kafka/client"
	"github.com/failover-exporter/failover_exporter/systems/kafka/settings"
)

// The canary lease: which of the exporters of one cluster writes its
// canary records. It is membership of a group of the cluster's own, the
// canary topic's name with ".lease" (classic group protocol, a protocol
// type of our own: no offsets, no topic, no assignment), and the member
// the group coordinator makes the group's leader holds the lease. Kafka
// Connect and Schema Registry elect their leaders the same way.
//
// Why a group: the coordinator is the cluster's own failure detector for
// clients, it keeps its members in a replicated internal topic, and it
// moves to another broker when its own dies, keeping them; so the lease
// survives the broker failures the canary measures, and a holder that
// dies, hangs or is cut off loses it after one session timeout.
//
// Fencing is on the holder's clock (package lease): the coordinator
// removes a member no sooner than a session timeout after the last
// heartbeat it received (a rebalance waits as long for it to rejoin), and
// no other member leads before; so a heartbeat answered without error and
// sent at t makes the hold good until t plus the session timeout, less a
// tenth. A holder that was paused or cut off stops writing before the
// coordinator can hand the lease on, and its successor need not wait. A
// record still in flight lands at an offset of its own: it can neither
// overwrite the successor's records nor be counted by it, since each
// exporter reads back only what it wrote.

// leaseProtocolType is the group's protocol type: a consumer of the
// classic protocol cannot join the group by mistake.
const leaseProtocolType = "failover_exporter_canary_lease"

// minSessionTimeout is the least session timeout a broker accepts by
// default (group.min.session.timeout.ms).
const minSessionTimeout = 6 * time.Second

// leaseRunner holds the group membership on its own schedule, apart from
// the rounds.
type leaseRunner struct {
	*lease.Lease
	opts   []kgo.Opt
	group  string
	period time.Duration
	logger log.Logger
	// wake asks the watcher for a round now; set once, before it runs.
	wake func()

	// The membership, owned by run's goroutine.
	client *kgo.Client
	// coordinator is the broker that coordinates the group, looked up by
	// lease_coordinator.go; noCoordinator when it is to be looked up.
	coordinator int32
	memberID    string
	generation  int32
	leader      bool
	joined      bool
	errKind     string

	attempts lease.Attempts

	mu      sync.Mutex
	lastErr error // the last attempt's, nil once one was answered
}

func newLeaseRunner(cfg settings.Cluster, logger log.Logger) (*leaseRunner, error) {
	opts, err := kafkaclient.FranzOptions(cfg)
	if err != nil {
		return nil, err
	}
	// The session timeout is the lease's ttl: the canary interval, and at
	// least what a broker accepts by default. Heartbeats four times per
	// ttl, so that one or two slow ones do not cost the hold.
	ttl := max(cfg.Canary.Interval, minSessionTimeout)
	return &leaseRunner{
		Lease:  lease.New(ttl, 0),
		opts:   append(opts, kgo.ClientID(cfg.ClientID+"_canary_lease")),
		group:  cfg.Canary.LeaseGroup(),
		period: ttl / 4,
		logger: logger,
		wake:   func() {},

		coordinator: noCoordinator,
	}, nil
}

// start runs the membership until stop, once; the first round calls it,
// so that the source does no I/O before it runs.
func (r *leaseRunner) start() error {
	return r.attempts.Start(func() error {
		client, err := kgo.NewClient(r.opts...)
		if err != nil {
			return fmt.Errorf("canary lease client: %w", err)
		}
		r.client = client
		return nil
	}, r.run)
}

// stop leaves the group, so that another exporter takes over at once (a
// rolling restart) rather than after a session timeout, and closes the
// client. The rounds have stopped: the watcher calls it when Run returns.
func (r *leaseRunner) stop() {
	if !r.attempts.Stop() {
		return
	}
	if r.memberID != "" {
		ctx, cancelLeave := context.WithTimeout(context.Background(), r.period)
		req := kmsg.NewPtrLeaveGroupRequest()
		req.Group, req.MemberID = r.group, r.memberID
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID = r.memberID
		req.Members = append(req.Members, m)
		if _, err := r.groupRequest(ctx, req); err == nil && r.Held(time.Now()) {
			level.Info(r.logger).Log("msg", "canary lease given back on stop", "group", r.group)
		}
		cancelLeave()
	}
	r.client.Close()
}

// err is the last attempt's error, nil when it was answered.
func (r *leaseRunner) err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastErr
}

func (r *leaseRunner) run(ctx context.Context) {
	for ctx.Err() == nil {
		var err error
		if r.joined {
			err = r.heartbeat(ctx)
		} else {
			err = r.join(ctx)
		}
		if ctx.Err() != nil {
			return
		}
		r.recordErr(err)
		if !r.joined && err == nil {
			continue // rejoin at once: the group is rebalancing
		}
		wait := r.period
		if r.coordinator == noCoordinator {
			// Look the coordinator up again soon: a hung one costs the
			// attempts until the cluster moved the group, not a period more.
			wait = r.period / 5
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
	}
}

// join joins the group (a new generation) and syncs; the leader of the
// generation holds the lease from its sync.
func (r *leaseRunner) join(ctx context.Context) error {
	ttl := int32(r.TTL().Milliseconds())
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group, req.MemberID, req.ProtocolType = r.group, r.memberID, leaseProtocolType
	// A rebalance waits for a member as long as a heartbeat would: a paused
	// holder is removed no sooner than its session timeout.
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = ttl, ttl
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name = "lease"
	req.Protocols = append(req.Protocols, p)
	ctx, cancel := context.WithTimeout(ctx, 2*r.TTL())
	defer cancel()
	kresp, err := r.groupRequest(ctx, req)
	if err != nil {
		// Finding the coordinator may be refused too (Describe on the group).
		return r.refused("join", err)
	}
	resp := kresp.(*kmsg.JoinGroupResponse)
	r.coordinatorFailed(kerr.ErrorForCode(resp.ErrorCode))
	switch err := kerr.ErrorForCode(resp.ErrorCode); {
	case errors.Is(err, kerr.MemberIDRequired):
		// The coordinator names the member; the next join uses the name.
		r.memberID = resp.MemberID
		return nil
	case errors.Is(err, kerr.UnknownMemberID):
		r.memberID = ""
		return nil
	case err != nil:
		return r.refused("join", err)
	}
	r.memberID, r.generation = resp.MemberID, resp.Generation
	r.leader = resp.LeaderID == resp.MemberID
	if !r.leader {
		r.drop()
	}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.Generation, sync.MemberID = r.group, r.generation, r.memberID
	sync.ProtocolType, sync.Protocol = &req.ProtocolType, resp.Protocol
	if r.leader {
		for _, m := range resp.Members {
			a := kmsg.NewSyncGroupRequestGroupAssignment()
			a.MemberID = m.MemberID
			sync.GroupAssignment = append(sync.GroupAssignment, a)
		}
	}
	sent := time.Now()
	sresp, err := r.groupRequest(ctx, sync)
	if err != nil {
		return r.refused("sync", err)
	}
	if err := kerr.ErrorForCode(sresp.(*kmsg.SyncGroupResponse).ErrorCode); err != nil {
		r.coordinatorFailed(err)
		return r.answered(sent, err)
	}
	r.joined = true
	r.record(sent, r.leader)
	return nil
}

// heartbeat tells the coordinator the member lives; answered without
// error, it extends the leader's hold.
func (r *leaseRunner) heartbeat(ctx context.Context) error {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.Generation, req.MemberID = r.group, r.generation, r.memberID
	ctx, cancel := context.WithTimeout(ctx, r.period)
	defer cancel()
	sent := time.Now()
	resp, err := r.groupRequest(ctx, req)
	if err != nil {
		// No answer is no grant: the hold runs out on the holder's clock.
		r.record(sent, false)
		return r.refused("heartbeat", err)
	}
	if err := kerr.ErrorForCode(resp.(*kmsg.HeartbeatResponse).ErrorCode); err != nil {
		r.coordinatorFailed(err)
		return r.answered(sent, err)
	}
	r.record(sent, r.leader)
	return nil
}

// answered handles a heartbeat's or sync's error code.
func (r *leaseRunner) answered(sent time.Time, err error) error {
	switch {
	case errors.Is(err, kerr.RebalanceInProgress):
		// Someone joined or left. The hold stands until it runs out or the
		// next generation has another leader: rejoin now.
		r.joined = false
		r.record(sent, false)
		return nil
	case errors.Is(err, kerr.UnknownMemberID), errors.Is(err, kerr.IllegalGeneration):
		// The coordinator removed us: another member may lead already.
		r.joined, r.memberID = false, ""
		r.drop()
		return nil
	}
	r.record(sent, false)
	return r.refused("heartbeat", err)
}

// refused names a refusal the user must act on.
func (r *leaseRunner) refused(what string, err error) error {
	switch {
	case errors.Is(err, kerr.GroupAuthorizationFailed):
		return fmt.Errorf("%s group %s: %w (the canary's user needs Read on the group, docs/security.md; or set canary.lease: false on a lone exporter)", what, r.group, err)
	case errors.Is(err, kerr.InvalidSessionTimeout):
		return fmt.Errorf("%s group %s with a session timeout of %s: %w (the broker's group.min.session.timeout.ms or group.max.session.timeout.ms refuses it; the session timeout is the canary interval, at least 6 s)", what, r.group, r.TTL(), err)
	case errors.Is(err, kerr.InconsistentGroupProtocol):
		return fmt.Errorf("%s group %s: %w (another client uses the group; it must be the exporters' own)", what, r.group, err)
	}
	return fmt.Errorf("%s group %s: %w", what, r.group, err)
}

// record records an attempt sent at sent, granted when the leader's was
// answered, and logs a hold that began or ended.
func (r *leaseRunner) record(sent time.Time, granted bool) {
	held, changed := r.Record(sent, granted)
	if !changed {
		return
	}
	if held {
		level.Info(r.logger).Log("msg", "canary lease taken: this exporter writes the canary", "group", r.group, "generation", r.generation, "session_timeout", r.TTL())
		r.wake()
		return
	}
	level.Info(r.logger).Log("msg", "canary lease lost: this exporter stops writing the canary", "group", r.group)
}

// drop ends a hold the coordinator says is over.
func (r *leaseRunner) drop() {
	if r.Drop() {
		level.Info(r.logger).Log("msg", "canary lease lost: this exporter stops writing the canary", "group", r.group)
	}
}

// recordErr keeps the last attempt's error for the rounds, and logs a
// change of it at debug: a standby's round fails with it, which the
// watcher logs at warn.
func (r *leaseRunner) recordErr(err error) {
	r.mu.Lock()
	r.lastErr = err
	r.mu.Unlock()
	kind := ""
	if err != nil {
		kind = errorKind(err)
	}
	if kind != r.errKind {
		r.errKind = kind
		level.Debug(r.logger).Log("msg", "canary lease attempts", "error", kind, "err", err)
	}
}
