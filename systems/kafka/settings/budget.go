package settings

import (
	"fmt"

	"gopkg.in/yaml.v3"
)

// Budget configures a Kafka cluster's failure budget: what stopping
// one broker or rack now would do (systems/kafka/budget.go).
type Budget struct {
	// MinISRHeadroom is how many in-sync replicas above min.insync.replicas
	// every partition must keep after a stop for the stop to count as safe
	// (0, the default: keeping min ISR is enough). With 1, a topic with
	// replication factor 3 and min ISR 2 makes no broker safe to stop.
	MinISRHeadroom int `yaml:"min_isr_headroom"`
	// UnwatchedTopics chooses what the budget does with the topics the
	// topic filter leaves out: judge them (the default: their partitions
	// are read and kept for the budget alone, with no series) or only name
	// them in each answer's not_judged. Internal topics are judged either
	// way.
	UnwatchedTopics UnwatchedTopics `yaml:"unwatched_topics"`
	// Coordinators chooses what the budget does with the group and
	// transaction coordinators a stop would move: inform (the default:
	// facts in each answer) or settled (also unsafe while coordinators
	// load or fail, or groups the stop moves rebalance; not judged while
	// the coordinator read is missing, stale or incomplete).
	Coordinators CoordinatorMoves `yaml:"coordinators"`
}

// CoordinatorMoves is failure_budget.coordinators.
type CoordinatorMoves string

// Values are the two choices (config.Enum).
func (CoordinatorMoves) Values() []any {
	return []any{string(InformCoordinators), string(SettledCoordinators)}
}

// The values of failure_budget.coordinators.
const (
	// InformCoordinators gives the coordinator moves as facts only.
	InformCoordinators CoordinatorMoves = "inform"
	// SettledCoordinators makes a stop unsafe while the coordinators have
	// not settled from the last one.
	SettledCoordinators CoordinatorMoves = "settled"
)

// Settled reports whether a stop waits for the coordinators to settle.
func (c CoordinatorMoves) Settled() bool { return c == SettledCoordinators }

// UnwatchedTopics is failure_budget.unwatched_topics.
type UnwatchedTopics string

// Values are the two choices (config.Enum).
func (UnwatchedTopics) Values() []any { return []any{string(JudgeUnwatched), string(NameUnwatched)} }

// The values of failure_budget.unwatched_topics.
const (
	// JudgeUnwatched judges the topics outside the filter as the others.
	JudgeUnwatched UnwatchedTopics = "judge"
	// NameUnwatched leaves them out of the verdict and names them.
	NameUnwatched UnwatchedTopics = "name"
)

// Judged reports whether a topic outside the filter is judged.
func (u UnwatchedTopics) Judged() bool { return u != NameUnwatched }

// UnmarshalYAML decodes the block strictly and validates it where it is
// read, so a bad value is refused with its line.
func (b *Budget) UnmarshalYAML(value *yaml.Node) error {
	if value.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: failure_budget must be a mapping, e.g. {min_isr_headroom: 1}", value.Line)
	}
	// Node.Decode does not inherit the file's KnownFields, so unknown keys
	// are refused here.
	for i := 0; i+1 < len(value.Content); i += 2 {
		if key := value.Content[i].Value; key != "min_isr_headroom" && key != "unwatched_topics" && key != "coordinators" {
			return fmt.Errorf("line %d: field %s not found in failure_budget (known: min_isr_headroom, unwatched_topics, coordinators)", value.Content[i].Line, key)
		}
	}
	type plain Budget
	if err := value.Decode((*plain)(b)); err != nil {
		return err
	}
	if err := b.Validate(); err != nil {
		return fmt.Errorf("line %d: %w", value.Line, err)
	}
	return nil
}

// Validate checks the settings.
func (b Budget) Validate() error {
	if b.MinISRHeadroom < 0 {
		return fmt.Errorf("failure_budget.min_isr_headroom %d must be 0 or more", b.MinISRHeadroom)
	}
	switch b.UnwatchedTopics {
	case "", JudgeUnwatched, NameUnwatched:
	default:
		return fmt.Errorf("failure_budget.unwatched_topics %q must be %q (judge the topics outside the topic filter too) or %q (name them in each answer, unjudged)",
			b.UnwatchedTopics, JudgeUnwatched, NameUnwatched)
	}
	switch b.Coordinators {
	case "", InformCoordinators, SettledCoordinators:
	default:
		return fmt.Errorf("failure_budget.coordinators %q must be %q (the coordinators a stop moves are facts in its answer) or %q (a stop is also unsafe while coordinators have not settled)",
			b.Coordinators, InformCoordinators, SettledCoordinators)
	}
	return nil
}
