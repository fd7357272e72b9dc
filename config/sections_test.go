package config

import (
	"reflect"
	"testing"
)

// Config's own fields and the sections table agree: each field is the
// list of the section of its yaml key, and the file's type has a field for
// every section, so the decoder and the type walk know them all.
func TestSectionsAreConfigFields(t *testing.T) {
	fields := yamlFields(reflect.TypeOf(Config{}))
	file := yamlFields(fileType())
	for _, s := range Sections() {
		if f, ok := fields[s.Key]; !ok || f.Type != s.typ {
			t.Errorf("section %s: Config has no field %s of type %s", s.Key, s.Key, s.typ)
		}
		if f, ok := file[s.Key]; !ok || f.Type != s.typ {
			t.Errorf("section %s: the file's type has no field %s of type %s", s.Key, s.Key, s.typ)
		}
	}
	if len(fields) != len(Sections()) {
		t.Errorf("Config has %d yaml fields, the table %d sections", len(fields), len(Sections()))
	}
	cfg := &Config{Kafka: []KafkaCluster{{BootstrapServers: []string{"127.0.0.1:9092"}}}}
	if err := cfg.Complete(); err != nil {
		t.Fatal(err)
	}
	if cfg.Kafka[0].Name != DefaultKafkaClusterName {
		t.Errorf("Complete left the kafka section's defaults out: %+v", cfg.Kafka[0])
	}
}
