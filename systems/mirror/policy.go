package mirror

import (
	"strings"

	"github.com/failover-exporter/failover_exporter/config"
	"github.com/failover-exporter/failover_exporter/systems/mirror/settings"
)

// policy is how a flow names topics on the target and which source topics
// it replicates: MM2's DefaultReplicationPolicy or
// IdentityReplicationPolicy, with their separators, and its default topic
// filter.
type policy struct {
	identity                 bool
	sourceAlias, targetAlias string
	// separator joins alias and topic (replication.policy.separator);
	// internalSeparator the parts of MM2's internal topics' names.
	separator, internalSeparator string
	heartbeats                   string
	topics                       *config.Regexp
}

func newPolicy(m settings.Flow) policy {
	return policy{
		identity:          m.ReplicationPolicy == settings.ReplicationPolicyIdentity,
		sourceAlias:       m.SourceAlias,
		targetAlias:       m.TargetAlias,
		separator:         m.ReplicationPolicySeparator,
		internalSeparator: m.InternalSeparator(),
		heartbeats:        m.HeartbeatsTopic,
		topics:            m.Topics,
	}
}

// remoteTopic is the target's name for a source topic (formatRemoteTopic).
func (p policy) remoteTopic(topic string) string {
	if p.identity {
		return topic
	}
	return p.sourceAlias + p.separator + topic
}

// sourceTopic is the source topic a remote topic replicates, as far as
// its name tells (upstreamTopic).
func (p policy) sourceTopic(remote string) (string, bool) {
	if p.identity {
		return remote, true
	}
	return strings.CutPrefix(remote, p.sourceAlias+p.separator)
}

// remoteHeartbeats is where the source's heartbeats land on the target:
// <alias><separator>heartbeats with either policy
// (IdentityReplicationPolicy defers to the default for heartbeats).
func (p policy) remoteHeartbeats() string { return p.sourceAlias + p.separator + p.heartbeats }

// replicates reports whether the flow replicates the source topic: it
// matches the configured filter and is none of what MM2 never replicates
// as data (ReplicationPolicy.isInternalTopic and isMM2InternalTopic, MM2's
// default topics.exclude .*[\-\.]internal and .*\.replica, heartbeats,
// which are measured apart),
// nor, with the default policy, a topic the target itself is the source
// of (MM2's cycle detection).
func (p policy) replicates(topic string) bool {
	switch {
	case isInternalTopic(topic), strings.HasSuffix(topic, p.internalSeparator+"internal"), strings.HasSuffix(topic, ".replica"):
		return false
	case topic == p.heartbeats || strings.HasSuffix(topic, p.separator+p.heartbeats):
		return false
	case !p.identity && strings.HasPrefix(topic, p.targetAlias+p.separator):
		return false
	}
	return p.topics == nil || p.topics.MatchString(topic)
}

// isInternalTopic is ReplicationPolicy.isInternalTopic.
func isInternalTopic(topic string) bool {
	return strings.HasPrefix(topic, "__") || strings.HasPrefix(topic, ".") ||
		strings.HasSuffix(topic, ".internal") || strings.HasSuffix(topic, "-internal")
}
