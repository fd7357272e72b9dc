package mirror

import "github.com/failover-exporter/failover_exporter/collector/events"

// MirrorMaker 2 flows (systems/mirror). Stalled: the newest heartbeat
// replicated to the target is older than the flow's stall_after (Before
// is empty, After the heartbeat's age, or "no heartbeat"); resumed: it is
// younger again (Before is the age at the last stalled refresh). A source
// topic the flow replicates is missing on the target (After: the remote
// topic's name), or appeared there.
const (
	EventStalled       events.Kind = "mirror_stalled"
	EventResumed       events.Kind = "mirror_resumed"
	EventTopicMissing  events.Kind = "mirror_topic_missing"
	EventTopicAppeared events.Kind = "mirror_topic_appeared"
	// EventConnectorState: one of the flow's connectors, or one of its
	// tasks (Subject.Task set), changed state as the Kafka Connect REST API
	// reports it (Before and After: RUNNING, FAILED, PAUSED...; After ends
	// with the failure trace's first line for FAILED). Only for flows with
	// a connect REST API, between two refreshes that read it.
	EventConnectorState events.Kind = "mirror_connector_state"
)
