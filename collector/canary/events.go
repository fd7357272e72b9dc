package canary

import "github.com/failover-exporter/failover_exporter/collector/events"

// Write canary observations (collector/canary), about a Kafka canary
// partition and its leader, or a Redis master. A leader or master starts
// or stops refusing the canary's writes (After, or Before when it
// recovered, is the error kind as the error label spells it), or writes it
// acknowledged were not found after its slot or partition changed hands
// (After is how many).
const (
	EventWriteFailing           events.Kind = "write_failing"
	EventWriteRecovered         events.Kind = "write_recovered"
	EventAcknowledgedWritesLost events.Kind = "acknowledged_writes_lost"
)
