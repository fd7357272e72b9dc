package mirror

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestNeedsGrant(t *testing.T) {
	for _, tc := range []struct {
		name         string
		err          error
		op, resource string
		want         string
	}{
		{"topic refused", fmt.Errorf("fetch east.checkpoints.internal/0: %w", kerr.TopicAuthorizationFailed), "Read", "topic east.checkpoints.internal",
			"fetch east.checkpoints.internal/0: TOPIC_AUTHORIZATION_FAILED: Not authorized to access topics: [Topic authorization failed.] " +
				"(the exporter's user needs Read on topic east.checkpoints.internal on cluster west)"},
		{"group refused", fmt.Errorf("offset fetch for group billing: %w", kerr.GroupAuthorizationFailed), "Describe", "group billing",
			"offset fetch for group billing: GROUP_AUTHORIZATION_FAILED: Not authorized to access group: Group authorization failed. " +
				"(the exporter's user needs Describe on group billing on cluster west)"},
		{"not an authorization error", fmt.Errorf("fetch from broker 1: %w", context.DeadlineExceeded), "Read", "topic x",
			"fetch from broker 1: context deadline exceeded"},
		{"another Kafka error", fmt.Errorf("fetch x/0: %w", kerr.NotLeaderForPartition), "Read", "topic x", "fetch x/0: " + kerr.NotLeaderForPartition.Error()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := needsGrant(tc.err, tc.op, tc.resource, "west")
			if got.Error() != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			if !errors.Is(got, tc.err) {
				t.Errorf("%v does not wrap %v", got, tc.err)
			}
		})
	}
}

func TestGroupList(t *testing.T) {
	for groups, want := range map[string]string{
		"a":         "group a",
		"a b":       "groups a, b",
		"a b c":     "groups a, b, c",
		"a b c d e": "groups a, b, c and 2 more",
	} {
		if got := groupList(strings.Fields(groups)); got != want {
			t.Errorf("groupList(%q) = %q, want %q", groups, got, want)
		}
	}
}
