package kafkaclient

import (
	"testing"

	"github.com/IBM/sarama"

	"github.com/failover-exporter/failover_exporter/systems/kafka/settings"
)

// config checks Kafka versions without linking sarama; Configs hands the
// same string to sarama. These tests hold the two parsers to one answer,
// so a version config accepts is one the client can be built with.

var versionSeeds = []string{
	"", "1", "1.0", "1.0.0", "2.0.1", "2.1.0", "2.1", "3.0.0", "4.0.0",
	"0.11.0.2", "0.10.2.1", "0.8.2.0", "0.11.0", "00.11.0.2", "01.1.0",
	"1.0.0.0", "2.01.0", "10.20.30", " 3.0.0", "3.0.0 ", "3.0.0\n", "3..0",
	"+3.0.0", "-3.0.0", "3.0.x", "٣.0.0", "18446744073709551615.0.0",
	"18446744073709551616.0.0", "1.2.3.4.5",
}

func checkVersionAgrees(t *testing.T, v string) {
	t.Helper()
	want, err := sarama.ParseKafkaVersion(v)
	got, ok := settings.ParseVersion(v)
	if ok != (err == nil) {
		t.Fatalf("ParseKafkaVersion(%q): config ok %v, sarama error %v", v, ok, err)
	}
	if !ok {
		return
	}
	if got.String() != want.String() {
		t.Fatalf("ParseKafkaVersion(%q): config %s, sarama %s", v, got, want)
	}
	if got.IsAtLeast(settings.MinVersion) != want.IsAtLeast(sarama.V2_1_0_0) {
		t.Fatalf("%q at least %s: config %v, sarama %v", v, settings.MinVersion, got.IsAtLeast(settings.MinVersion), want.IsAtLeast(sarama.V2_1_0_0))
	}
}

func TestKafkaVersionAgreesWithSarama(t *testing.T) {
	if settings.MinVersion.String() != sarama.V2_1_0_0.String() {
		t.Fatalf("MinKafkaVersion %s, want sarama's %s", settings.MinVersion, sarama.V2_1_0_0)
	}
	for _, v := range versionSeeds {
		checkVersionAgrees(t, v)
	}
}

func FuzzKafkaVersionAgreesWithSarama(f *testing.F) {
	for _, v := range versionSeeds {
		f.Add(v)
	}
	f.Fuzz(checkVersionAgrees)
}
