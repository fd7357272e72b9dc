// Package configtest holds what the config tests of several settings
// packages share: a bad file refused with one clear message per mistake.
package configtest

import (
	"strings"
	"testing"

	"github.com/failover-exporter/failover_exporter/config"
)

// Refusal is a config file that must be refused: with exactly one of each
// Want, as many messages as Want has, and none of NotWant (settings the
// user never gave, secrets).
type Refusal struct {
	Name, YAML string
	Want       []string
	NotWant    []string
}

// R is a Refusal, for tables of them.
func R(name, yaml string, want, notWant []string) Refusal {
	return Refusal{Name: name, YAML: yaml, Want: want, NotWant: notWant}
}

// Refuses parses each file as the exporter does and checks its refusal.
func Refuses(t *testing.T, cases []Refusal) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			_, err := config.Parse([]byte(c.YAML))
			if err == nil {
				t.Fatalf("accepted:\n%s", c.YAML)
			}
			msg := err.Error()
			for _, w := range c.Want {
				if strings.Count(msg, w) != 1 {
					t.Errorf("error %q: want exactly one %q", msg, w)
				}
			}
			if lines := strings.Count(msg, "\n") + 1; lines != len(c.Want) {
				t.Errorf("error has %d messages, want %d:\n%s", lines, len(c.Want), msg)
			}
			for _, nw := range c.NotWant {
				if strings.Contains(msg, nw) {
					t.Errorf("error %q mentions %q", msg, nw)
				}
			}
		})
	}
}

// RefusedSaying parses a file that must be refused with a message
// containing want, and that none of secrets (written inline in it) leaks.
func RefusedSaying(t *testing.T, yaml, want string, secrets ...string) {
	t.Helper()
	_, err := config.Parse([]byte(yaml))
	for _, secret := range secrets {
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Errorf("error leaks the inline secret: %v", err)
		}
	}
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error = %v, want it to contain %q", err, want)
	}
}
