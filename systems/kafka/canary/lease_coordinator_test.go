package kafkacanary

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestCoordinatorGone: which errors of a group request make the lease look
// its coordinator up again. A hung coordinator answers nothing, so a
// timeout must, as the codes of a coordinator that moved do; the group's
// own answers must not, or every rebalance would cost a lookup.
func TestCoordinatorGone(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"answered", nil, false},
		{"timeout of a hung coordinator", fmt.Errorf("coordinator 2: %w", context.DeadlineExceeded), true},
		{"connection refused by a dead one", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, true},
		{"connection cut", fmt.Errorf("coordinator 2: %w", io.EOF), true},
		{"broker no longer in the metadata", errors.New("unknown broker"), true},
		{"NOT_COORDINATOR", kerr.NotCoordinator, true},
		{"COORDINATOR_NOT_AVAILABLE", kerr.CoordinatorNotAvailable, true},
		{"COORDINATOR_LOAD_IN_PROGRESS", fmt.Errorf("heartbeat: %w", kerr.CoordinatorLoadInProgress), true},
		{"REBALANCE_IN_PROGRESS", kerr.RebalanceInProgress, false},
		{"UNKNOWN_MEMBER_ID", kerr.UnknownMemberID, false},
		{"ILLEGAL_GENERATION", kerr.IllegalGeneration, false},
		{"GROUP_AUTHORIZATION_FAILED", kerr.GroupAuthorizationFailed, false},
		{"the runner stops", context.Canceled, false},
	} {
		if got := coordinatorGone(tc.err); got != tc.want {
			t.Errorf("%s: coordinatorGone(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

// TestCoordinatorFailedForgets: the runner forgets its coordinator on a
// timeout and keeps it on a rebalance.
func TestCoordinatorFailedForgets(t *testing.T) {
	r := &leaseRunner{coordinator: 2}
	r.coordinatorFailed(kerr.RebalanceInProgress)
	if r.coordinator != 2 {
		t.Fatalf("a rebalance forgot the coordinator")
	}
	r.coordinatorFailed(context.DeadlineExceeded)
	if r.coordinator != noCoordinator {
		t.Fatalf("a timeout kept coordinator %d", r.coordinator)
	}
}
