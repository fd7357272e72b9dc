package mirror

import (
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// needsGrant adds to an authorization error the grant the exporter's user
// lacks, so that the log says what to allow where (docs/mirror.md,
// "Minimal ACLs"). Other errors are returned as they are.
func needsGrant(err error, operation, resource, cluster string) error {
	if !isAuthorizationError(err) {
		return err
	}
	return fmt.Errorf("%w (the exporter's user needs %s on %s on cluster %s)", err, operation, resource, cluster)
}

func isAuthorizationError(err error) bool {
	return errors.Is(err, kerr.TopicAuthorizationFailed) || errors.Is(err, kerr.GroupAuthorizationFailed) ||
		errors.Is(err, kerr.ClusterAuthorizationFailed)
}

// groupList names up to three groups, "group a" or "groups a, b, c and 4
// more", for a log line.
func groupList(groups []string) string {
	const shown = 3
	switch {
	case len(groups) == 1:
		return "group " + groups[0]
	case len(groups) <= shown:
		return "groups " + strings.Join(groups, ", ")
	default:
		return fmt.Sprintf("groups %s and %d more", strings.Join(groups[:shown], ", "), len(groups)-shown)
	}
}
