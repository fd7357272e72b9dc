package config

import (
	"fmt"

	"gopkg.in/yaml.v3"
)

// KafkaBudget configures a Kafka cluster's failure budget: what stopping
// one broker or rack now would do (collector/kafka/budget.go).
type KafkaBudget struct {
	// MinISRHeadroom is how many in-sync replicas above min.insync.replicas
	// every partition must keep after a stop for the stop to count as safe
	// (0, the default: keeping min ISR is enough). With 1, a topic with
	// replication factor 3 and min ISR 2 makes no broker safe to stop.
	MinISRHeadroom int `yaml:"min_isr_headroom"`
}

// UnmarshalYAML decodes the block strictly and validates it where it is
// read, so a bad value is refused with its line.
func (b *KafkaBudget) UnmarshalYAML(value *yaml.Node) error {
	if value.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: failure_budget must be a mapping, e.g. {min_isr_headroom: 1}", value.Line)
	}
	// Node.Decode does not inherit the file's KnownFields, so unknown keys
	// are refused here.
	for i := 0; i+1 < len(value.Content); i += 2 {
		if key := value.Content[i].Value; key != "min_isr_headroom" {
			return fmt.Errorf("line %d: field %s not found in failure_budget (known: min_isr_headroom)", value.Content[i].Line, key)
		}
	}
	type plain KafkaBudget
	if err := value.Decode((*plain)(b)); err != nil {
		return err
	}
	if err := b.Validate(); err != nil {
		return fmt.Errorf("line %d: %w", value.Line, err)
	}
	return nil
}

// Validate checks the settings.
func (b KafkaBudget) Validate() error {
	if b.MinISRHeadroom < 0 {
		return fmt.Errorf("failure_budget.min_isr_headroom %d must be 0 or more", b.MinISRHeadroom)
	}
	return nil
}
