package config

import (
	"reflect"
	"testing"
)

// The sections table is the one truth about the file's sections: the
// file's type has a field for every section, so the decoder and the type
// walk know them all, and each field Config still has is the list of the
// section of its yaml key (the modules sections have none: their entries
// live in the config's table).
func TestSectionsAreConfigFields(t *testing.T) {
	fields := yamlFields(reflect.TypeOf(Config{}))
	file := yamlFields(fileType())
	keys := map[string]bool{}
	for _, s := range Sections() {
		keys[s.Key] = true
		if f, ok := fields[s.Key]; ok && f.Type != s.typ {
			t.Errorf("section %s: Config's field %s is of type %s, the section's %s", s.Key, s.Key, f.Type, s.typ)
		}
		if f, ok := file[s.Key]; !ok || f.Type != s.typ {
			t.Errorf("section %s: the file's type has no field %s of type %s", s.Key, s.Key, s.typ)
		}
	}
	for key := range fields {
		if !keys[key] {
			t.Errorf("Config has a field %s that is no section of the table", key)
		}
	}
	if len(file) != len(Sections()) {
		t.Errorf("the file's type has %d fields, the table %d sections", len(file), len(Sections()))
	}
	cfg := &Config{Kafka: []KafkaCluster{{BootstrapServers: []string{"127.0.0.1:9092"}}}}
	if err := cfg.Complete(); err != nil {
		t.Fatal(err)
	}
	if cfg.Kafka[0].Name != DefaultKafkaClusterName {
		t.Errorf("Complete left the kafka section's defaults out: %+v", cfg.Kafka[0])
	}
}
