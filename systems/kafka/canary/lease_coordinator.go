package kafkacanary

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The lease group's coordinator is looked up here, not by kgo: kgo keeps
// the coordinator it found until the broker answers NOT_COORDINATOR or the
// like, and a hung broker (SIGSTOP, a stalled disk, a full GC) answers
// nothing: its connection stays open and every heartbeat times out on it,
// while the cluster fences the broker (broker.session.timeout.ms) and moves
// the group to the new leader of its __consumer_offsets partition. So a
// request that timed out, or a connection that failed, forgets the
// coordinator as those codes do, and the next attempt, soon, asks another
// broker where the group is. The group there kept its members: the next
// heartbeat is answered, and the holder holds again, one attempt after the
// cluster moved the group.

// noCoordinator is the coordinator field's value when none is known.
const noCoordinator int32 = -1

// groupRequest sends req to the group's coordinator, found first when none
// is known, and forgets it when the request fails for a reason that may be
// the coordinator's.
func (r *leaseRunner) groupRequest(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	if r.coordinator == noCoordinator {
		node, err := r.findCoordinator(ctx)
		if err != nil {
			return nil, err
		}
		r.coordinator = node
	}
	node := r.coordinator
	resp, err := r.client.Broker(int(node)).Request(ctx, req)
	if err != nil {
		r.coordinatorFailed(err)
		return nil, fmt.Errorf("coordinator %d: %w", node, err)
	}
	return resp, nil
}

// coordinatorFailed forgets the coordinator when err may be its fault (see
// coordinatorGone): the next attempt looks it up.
func (r *leaseRunner) coordinatorFailed(err error) {
	if coordinatorGone(err) {
		r.coordinator = noCoordinator
	}
}

// coordinatorGone reports whether err, a group request's error or the
// error of its answer's code, says the coordinator may be elsewhere or
// gone: the codes of a coordinator that moved or is loading the group, and
// every error that is no answer (a timeout, a failed connection, a broker
// the client does not know). An answer's other codes (a rebalance, an
// unknown member, a refusal) are the group's, from its coordinator.
func coordinatorGone(err error) bool {
	var code *kerr.Error
	switch {
	case err == nil:
		return false
	case errors.Is(err, kerr.NotCoordinator), errors.Is(err, kerr.CoordinatorNotAvailable), errors.Is(err, kerr.CoordinatorLoadInProgress):
		return true
	case errors.Is(err, context.Canceled):
		return false // the runner stops
	case errors.As(err, &code):
		return false
	}
	return true
}

// findCoordinator asks a broker which broker coordinates the group: any
// broker, kgo's next in turn, so that a lookup that met the hung broker
// (whose answer the live ones give too until the cluster fenced it) is
// followed by one that asks another. Within a heartbeat period: a live
// broker answers from its metadata at once, but the first lookup also
// connects (TLS, SASL), which a shorter deadline could keep failing on a
// slow link.
func (r *leaseRunner) findCoordinator(ctx context.Context) (int32, error) {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType = 0 // a group
	req.CoordinatorKey = r.group
	ctx, cancel := context.WithTimeout(ctx, r.period)
	defer cancel()
	resp, err := req.RequestWith(ctx, r.client)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		return noCoordinator, fmt.Errorf("find coordinator: %w", err)
	}
	return resp.NodeID, nil
}
