package config

import (
	"errors"
	"strings"
	"testing"
)

// The entries of allowed_targets: each form read, each mistake refused
// naming the entry and saying what to write.
func TestAllowedTargetsSyntax(t *testing.T) {
	for _, good := range []string{
		"10.0.0.5:9092", "10.0.0.0/8:9092", "10.0.0.0/8:*", "10.0.0.0/8:9092-9094", "0.0.0.0/0:9092",
		"[fd00::1]:6379", "[fd00::/8]:6379", "[FD00::/8]:*",
		"kafka-1.prod.internal:9092", "Kafka-1.Prod.Internal.:9092", "*.prod.internal:9092", "*.internal:1-65535", "localhost:6379",
	} {
		if _, err := parseAllowEntry(good); err != nil {
			t.Errorf("parseAllowEntry(%q): %v", good, err)
		}
	}
	for bad, says := range map[string]string{
		"10.0.0.5":                "want HOST:PORTS",
		"10.0.0.5:":               `port ""`,
		"10.0.0.5:0":              `port "0"`,
		"10.0.0.5:65536":          `port "65536"`,
		"10.0.0.5:9094-9092":      "runs backwards",
		"10.0.0.5:9092-":          `port ""`,
		"10.0.0.5:-9092":          `port ""`,
		"10.0.0.5:09092":          `port "09092"`,
		"10.0.0.1/8:9092":         "has bits set past its /8: write 10.0.0.0/8",
		"10.0.0.0/33:9092":        "is not a CIDR range",
		"fd00::1:9092":            "needs brackets",
		"[fd00::]/8:9092":         "write [fd00::/8]:9092",
		"[fd00::1:9092":           "opening bracket",
		"[kafka]:9092":            "brackets hold an IPv6 address",
		"[10.0.0.1]:9092":         "brackets hold an IPv6 address",
		"[fe80::1%eth0]:9092":     "zone",
		"[::ffff:10.0.0.0/104]:1": "IPv4-mapped",
		"*:9092":                  "allow_any_target: true",
		"kafka-*.prod:9092":       "a wildcard is *. in front of a name only",
		"*.*.prod:9092":           "a wildcard is *. in front of a name only",
		"*.:9092":                 "the host is empty",
		"kafka_1.prod:9092":       "not a letter, digit or hyphen",
		"010.0.0.1:9092":          "is not an IP address",
		":9092":                   "the host is empty",
	} {
		_, err := parseAllowEntry(bad)
		if err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("parseAllowEntry(%q) = %v, want an error saying %q", bad, err, says)
		}
	}
	// In a file, the message names the module and the entry.
	// (systems/kafka/settings checks the same of a kafka module.)
	_, err := Parse([]byte("test_modules:\n  - name: m\n    allowed_targets: [10.0.0.0/8:9092, \"*:9092\"]\n"))
	if err == nil || !strings.Contains(err.Error(), `test module 1 ("m"): allowed_targets[1] "*:9092": a host of * would allow every host`) {
		t.Errorf("a bad entry in a file: %v", err)
	}
}

// Matching: IP targets against IP and CIDR entries only, names against
// names and wildcards only, case-insensitive, every address of a target.
func TestAllowedTargetsMatch(t *testing.T) {
	allowed := []string{
		"10.0.0.0/8:9092-9094", "192.168.1.5:6379", "[fd00::/8]:*",
		"kafka-1.prod.internal:9092", "*.redis.internal:6379",
	}
	for _, c := range []struct {
		addrs []string
		ok    bool
	}{
		{[]string{"10.1.2.3:9092"}, true},
		{[]string{"10.1.2.3:9094"}, true},
		{[]string{"10.1.2.3:9095"}, false},
		{[]string{"11.0.0.1:9092"}, false},
		{[]string{"192.168.1.5:6379"}, true},
		{[]string{"192.168.1.6:6379"}, false},
		{[]string{"[fd12::1]:1"}, true},
		{[]string{"[fe80::1]:1"}, false},
		{[]string{"kafka-1.prod.internal:9092"}, true},
		{[]string{"KAFKA-1.prod.internal.:9092"}, true},
		{[]string{"kafka-1.prod.internal:9093"}, false},
		{[]string{"kafka-2.prod.internal:9092"}, false},
		{[]string{"a.redis.internal:6379"}, true},
		{[]string{"a.b.redis.internal:6379"}, true},
		{[]string{"redis.internal:6379"}, false},
		{[]string{"xredis.internal:6379"}, false},
		{[]string{"a.redis.internal:6380"}, false},
		// A name never matches a range, whatever it resolves to.
		{[]string{"localhost:9092"}, false},
		// Every address: one outside refuses the target.
		{[]string{"10.1.2.3:9092", "10.1.2.4:9092"}, true},
		{[]string{"10.1.2.3:9092", "127.0.0.1:9092"}, false},
		{nil, false},
	} {
		err := CheckAllowedTargets(allowed, false, c.addrs)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrTargetNotAllowed)) {
			t.Errorf("CheckAllowedTargets(%v) = %v, want allowed %v", c.addrs, err, c.ok)
		}
	}
	// An IP entry does not match a name, even one spelled like the IP's
	// reverse; and the refusal names the address quoted.
	err := CheckAllowedTargets([]string{"127.0.0.1:6379"}, false, []string{"127.0.0.1:6379", "evil.example:6379"})
	if !errors.Is(err, ErrTargetNotAllowed) || !strings.Contains(err.Error(), `address "evil.example:6379" is not in`) {
		t.Errorf("a name against an IP entry: %v", err)
	}
	if err := CheckAllowedTargets(nil, true, []string{"anything.example:1"}); err != nil {
		t.Errorf("allow_any_target: %v", err)
	}
	if err := CheckAllowedTargets(nil, false, []string{"10.0.0.1:1"}); !errors.Is(err, ErrTargetNotAllowed) {
		t.Errorf("an empty list allows %v", err)
	}
}
