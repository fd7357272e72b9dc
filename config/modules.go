package config

import (
	"errors"
	"fmt"
	"strings"
)

// Modules are the settings of clusters the exporter is not told about in
// the file but asked about by a /probe request (the multi-target exporter
// pattern, blackbox_exporter's modules): a module is a cluster entry with
// everything but the address, which each request's target= gives. The
// entry's name is the module's, and the cluster's name (its kafka_cluster
// or redis_cluster label) is the target.
//
//	kafka_modules:
//	  - name: sasl
//	    sasl: {mechanism: SCRAM-SHA-512, username: monitor, password: {file: /etc/kafka-password}}
//	    allowed_targets: ["*.kafka.prod.internal:9092"]
//	redis_modules:
//	  - name: acl
//	    username: monitor
//	    password: {env: REDIS_PASSWORD}
//	    allowed_targets: [10.2.0.0/16:6379]
//
// A module says where its targets may be (allowlist.go): the manager
// builds nothing for a target outside its allowed_targets.

// moduleAddr stands in for a module's address while it is checked as a
// cluster would be: the address is the request's, checked then.
const moduleAddr = "127.0.0.1:1"

// ModuleSpec gives a section its modules (SectionSpec.Modules): the
// section KEY_modules, of entries of the section's own type that hold
// everything but the address, each checked as a cluster entry is at a
// stand-in address. A system declares this much and writes no module
// code of its own.
type ModuleSpec[C any] struct {
	// AddrKey is the key of an entry's addresses ("bootstrap_servers"),
	// which a module must leave out.
	AddrKey string
	// Addrs are an entry's addresses.
	Addrs func(*C) []string
	// At is the module m's cluster at addrs, called name.
	At func(m C, name string, addrs []string) C
	// Check is an entry's own check, run on the module at a stand-in
	// address.
	Check func(*C) error
	// Targets says where the module may go, and what it would carry there.
	Targets func(*C) ModuleTargets
}

// ModuleTargets are what a module says of where it may go
// (allowlist.go), and the keys of what it would carry: its credentials.
type ModuleTargets struct {
	Allowed     []string
	AllowAny    bool
	Credentials []string
	TLS         TLS
}

// moduleKey is the key of section key's modules: "kafka_modules".
func moduleKey(key string) string { return key + "_modules" }

// newModuleSection is the section of a section's modules.
func newModuleSection[C any](spec SectionSpec[C], m ModuleSpec[C]) Section {
	noun := strings.TrimSuffix(spec.Noun, " cluster") + " module"
	s := NewSection(SectionSpec[C]{
		Key: moduleKey(spec.Key), Noun: noun, TypeNames: spec.TypeNames,
		Defaults: spec.Defaults,
		Name:     spec.Name,
		Validate: func(*Config) func(*C) error {
			return func(c *C) error {
				if len(m.Addrs(c)) > 0 {
					return errNoModuleAddr(m.AddrKey)
				}
				probe := m.At(*c, spec.Name(c), []string{moduleAddr})
				t := m.Targets(c)
				return errors.Join(m.Check(&probe), checkModuleTargets(t.Allowed, t.AllowAny, t.Credentials, t.TLS))
			}
		},
	})
	s.at = func(cfg *Config, module, name string, addrs []string) (any, bool) {
		for _, e := range Entries[C](cfg, s.Key) {
			if spec.Name(&e) == module {
				return m.At(e, name, addrs), true
			}
		}
		return *new(C), false
	}
	return s
}

// ModuleAt is the cluster a /probe request asks for: cfg's module of
// section key ("kafka") called module, at addrs, called name; false when
// there is no such module. Whether the module allows addrs is
// CheckTarget's to say.
func ModuleAt[C any](cfg *Config, key, module, name string, addrs []string) (C, bool) {
	for _, s := range Sections() {
		if s.Key == moduleKey(key) && s.at != nil {
			c, ok := s.at(cfg, module, name, addrs)
			found, isC := c.(C)
			return found, ok && isC
		}
	}
	return *new(C), false
}

// HasModules reports whether cfg lists a module of any section.
func HasModules(cfg *Config) bool {
	for _, s := range Sections() {
		if s.at != nil && s.get(cfg).Len() > 0 {
			return true
		}
	}
	return false
}

func errNoModuleAddr(key string) error {
	return fmt.Errorf("%s is set: a module holds everything but the address, which each /probe request's target= gives", key)
}
