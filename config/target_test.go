package config

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// A target is written one way: its spellings are one target, with one
// name, and what is not HOST:PORT is refused naming the bad part quoted.
func TestParseTarget(t *testing.T) {
	for target, want := range map[string][]string{
		"127.0.0.1:9092":                 {"127.0.0.1:9092"},
		"127.0.0.1:9092, 127.0.0.1:9093": {"127.0.0.1:9092", "127.0.0.1:9093"},
		"kafka-0.kafka:9092":             {"kafka-0.kafka:9092"},
		// Sorted, lowercased, duplicates dropped: one target.
		"a:1,b:1":            {"a:1", "b:1"},
		"b:1,a:1":            {"a:1", "b:1"},
		"B:1, a:1":           {"a:1", "b:1"},
		"a:1,A:1,a.:1":       {"a:1"},
		"Kafka-0.Prod.:9092": {"kafka-0.prod:9092"},
		// IP literals canonical: IPv6 compressed in brackets, IPv4-mapped unmapped.
		"[::1]:6379":                   {"[::1]:6379"},
		"[FD00:0:0::0001]:6379":        {"[fd00::1]:6379"},
		"[::ffff:127.0.0.1]:6379":      {"127.0.0.1:6379"},
		"[::ffff:7f00:1]:6379":         {"127.0.0.1:6379"},
		"[127.0.0.1]:6379":             {"127.0.0.1:6379"},
		"127.0.0.1:1,[::1]:1":          {"127.0.0.1:1", "[::1]:1"},
		"x:65535":                      {"x:65535"},
		strings.Repeat("a", 63) + ":1": {strings.Repeat("a", 63) + ":1"},
	} {
		if got, err := ParseTarget(target); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("ParseTarget(%q) = %v, %v; want %v", target, got, err, want)
		}
	}
	sixteen := strings.TrimSuffix(strings.Repeat("a:1,", MaxTargetAddrs), ",")
	if _, err := ParseTarget(sixteen); err != nil {
		t.Errorf("ParseTarget of %d addresses: %v", MaxTargetAddrs, err)
	}
	for bad, says := range map[string]string{
		"":                                "target is empty",
		" ":                               "target is empty",
		"orders":                          `address "orders": want HOST:PORT`,
		"127.0.0.1":                       "want HOST:PORT",
		"127.0.0.1:9092,":                 "an address is empty",
		"127.0.0.1:notaport":              `port "notaport" is not a number`,
		"a:0":                             `port "0"`,
		"a:65536":                         `port "65536"`,
		"a:+1":                            `port "+1"`,
		"a:-1":                            `port "-1"`,
		"a:09092":                         `port "09092"`,
		"a:":                              `port ""`,
		"%FF:6379":                        `"%FF:6379"`,
		"\xff:6379":                       `target "\xff:6379" is not valid UTF-8`,
		"é:6379":                          `'é' is not printable ASCII`,
		"a\t:1":                           `'\t' is not printable ASCII`,
		"a\x00:1":                         `'\x00' is not printable ASCII`,
		"-a:1":                            "starts or ends with a hyphen",
		"a-:1":                            "starts or ends with a hyphen",
		"a..b:1":                          "empty label",
		".:1":                             "the host is empty",
		"a_b:1":                           `"_" is not a letter, digit or hyphen`,
		"a b:1":                           `" " is not a letter, digit or hyphen`,
		strings.Repeat("a", 64) + ":1":    "longer than 63",
		strings.Repeat("a.", 127) + "a:1": "longer than 253",
		"010.0.0.1:1":                     "is not an IP address",
		"1.2.3:1":                         "is not an IP address",
		"::1:6379":                        "needs brackets",
		"[fe80::1%eth0]:1":                "zone",
		"[orders]:1":                      "brackets hold an IPv6 address",
		"redis://a:1":                     "without a scheme",
		"user:secret@a:1":                 "without credentials",
		sixteen + ",b:1":                  "more than 16",
	} {
		got, err := ParseTarget(bad)
		if err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("ParseTarget(%q) = %v, %v; want an error saying %q", bad, got, err, says)
			continue
		}
		if !utf8.ValidString(err.Error()) || strings.Contains(err.Error(), "secret") {
			t.Errorf("ParseTarget(%q): the error %q echoes an invalid byte or a secret", bad, err)
		}
	}
}

// FuzzParseTarget: ParseTarget never panics, and what it accepts is
// canonical (read again, it is the same) and a name a cluster of the
// config could have.
func FuzzParseTarget(f *testing.F) {
	for _, seed := range []string{
		"127.0.0.1:9092", "b:1, A:1", "[::ffff:10.0.0.1]:6379", "[fd00::1]:1,x.y.:2",
		"%FF:6379", "\xff:1", "a:09092", "[fe80::1%eth0]:1", "a:1,a:1,a:1", "é:1",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, target string) {
		addrs, err := ParseTarget(target)
		if err != nil {
			if !utf8.ValidString(err.Error()) {
				t.Fatalf("ParseTarget(%q): the error is not valid UTF-8: %q", target, err)
			}
			return
		}
		name := strings.Join(addrs, ",")
		if len(addrs) == 0 || len(addrs) > MaxTargetAddrs {
			t.Fatalf("ParseTarget(%q) = %d addresses", target, len(addrs))
		}
		if err := checkName(name); err != nil {
			t.Fatalf("ParseTarget(%q) = %q, not a cluster name: %v", target, name, err)
		}
		for _, a := range addrs {
			if err := CheckAddr(a); err != nil {
				t.Fatalf("ParseTarget(%q) gave the address %q, which a cluster may not have: %v", target, a, err)
			}
			if strings.IndexFunc(a, func(r rune) bool { return r <= ' ' || r > '~' }) >= 0 {
				t.Fatalf("ParseTarget(%q) gave the address %q, not printable ASCII", target, a)
			}
		}
		again, err := ParseTarget(name)
		if err != nil || !reflect.DeepEqual(again, addrs) {
			t.Fatalf("ParseTarget(%q) = %q, which reads again as %q, %v", target, name, again, err)
		}
	})
}

func ExampleParseTarget() {
	addrs, _ := ParseTarget("Redis-2.Prod.:6379, [::ffff:10.0.0.1]:6379,redis-2.prod:6379")
	fmt.Println(strings.Join(addrs, ","))
	// Output: 10.0.0.1:6379,redis-2.prod:6379
}
