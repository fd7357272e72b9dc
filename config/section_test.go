package config

import (
	"errors"
	"fmt"
	"os"
	"testing"
	"time"
)

// The systems' sections are defined and registered by their settings
// packages (systems/<name>/settings), which this package's tests cannot
// import. These tests register a section of their own, test: and its
// modules test_modules:, which has what the generic machinery reads: a
// name, addresses, durations, a secret and TLS.

// testSettings is an entry of the test section.
type testSettings struct {
	Name            string        `yaml:"name"`
	Addrs           []string      `yaml:"addrs" example:"[host:1]"`
	RefreshInterval time.Duration `yaml:"refresh_interval"`
	RefreshTimeout  time.Duration `yaml:"refresh_timeout"`
	Password        Secret        `yaml:"password"`
	TLS             TLS           `yaml:"tls"`
	AllowedTargets  []string      `yaml:"allowed_targets"`
	AllowAnyTarget  bool          `yaml:"allow_any_target"`
}

// testModules gives the test section its modules, test_modules.
var testModules = &ModuleSpec[testSettings]{
	AddrKey: "addrs",
	Addrs:   func(s *testSettings) []string { return s.Addrs },
	At: func(s testSettings, name string, addrs []string) testSettings {
		s.Name, s.Addrs = name, addrs
		return s
	},
	Check: (*testSettings).validate,
	Targets: func(s *testSettings) ModuleTargets {
		var credentials []string
		if s.Password.IsSet() {
			credentials = append(credentials, "password")
		}
		return ModuleTargets{Allowed: s.AllowedTargets, AllowAny: s.AllowAnyTarget, Credentials: append(credentials, s.TLS.Credentials()...), TLS: s.TLS}
	},
}

// testSection is the test system's section.
var testSection = NewSection(SectionSpec[testSettings]{
	Key: "test", Noun: "test cluster",
	Defaults: func(s *testSettings) {
		if s.Name == "" {
			s.Name = "test"
		}
		if s.RefreshInterval == 0 {
			s.RefreshInterval = DefaultRefreshInterval
		}
		if s.RefreshTimeout == 0 {
			s.RefreshTimeout = RefreshTimeoutFor(s.RefreshInterval)
		}
	},
	Name:     func(s *testSettings) string { return s.Name },
	Validate: func(*Config) func(*testSettings) error { return (*testSettings).validate },
	Modules:  testModules,
})

func (s *testSettings) validate() error {
	var errs []error
	if len(s.Addrs) == 0 {
		errs = append(errs, errors.New("addrs is empty"))
	}
	for _, a := range s.Addrs {
		if err := CheckAddr(a); err != nil {
			errs = append(errs, fmt.Errorf("addr %w", err))
		}
	}
	errs = append(errs, ValidateTimings(s.RefreshInterval, s.RefreshTimeout, time.Second, time.Second, "")...)
	if s.Password.IsSet() {
		if err := s.Password.Validate("password"); err != nil {
			errs = append(errs, err)
		}
	}
	if err := s.TLS.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// CheckTarget makes the test settings a TargetChecker.
func (s testSettings) CheckTarget() error {
	return CheckAllowedTargets(s.AllowedTargets, s.AllowAnyTarget, s.Addrs)
}

func TestMain(m *testing.M) {
	if err := Register(testSection); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Exit(m.Run())
}
