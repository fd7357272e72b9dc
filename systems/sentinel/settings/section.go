// Package settings is the sentinel section of the config file: a Redis
// Sentinel deployment's settings (Set), their defaults and checks, its
// modules (sentinel_modules) and its fingerprint. Importing the package
// registers the section with config, so that config.Parse reads the
// sentinel key.
//
// Files: section.go is the section and what the engine asks of an entry
// (system.Settings, modules); settings.go the entry, its defaults and
// checks; budget.go the failure_budget block.
package settings

import (
	"slices"
	"time"

	"github.com/failover-exporter/failover_exporter/config"
)

// Key is the file's key of the Sentinel deployments.
const Key = "sentinel"

// Rank places the section after mirrors' in config's table.
const Rank = 4

// section is the sentinel list of the file.
var section = config.NewSection(config.SectionSpec[Set]{
	Key: Key, Noun: "sentinel cluster", Rank: Rank,
	// Four packages are called settings: the messages for an unknown key
	// name this one's types by the system.
	TypeNames: map[string]string{"settings.Set": "sentinel.Set", "settings.Connection": "sentinel.Connection", "settings.Budget": "sentinel.Budget", "settings.Canary": "sentinel.Canary"},
	Defaults:  (*Set).applyDefaults,
	Name:      func(s *Set) string { return s.Name },
	Validate:  func(*config.Config) func(*Set) error { return (*Set).validate },
	Modules: &config.ModuleSpec[Set]{
		AddrKey: "sentinels",
		Addrs:   func(s *Set) []string { return s.Sentinels },
		At:      Set.At,
		Check:   (*Set).validate,
		Targets: func(s *Set) config.ModuleTargets {
			return config.ModuleTargets{Allowed: s.AllowedTargets, AllowAny: s.AllowAnyTarget, Credentials: s.credentials(), TLS: s.moduleTLS()}
		},
	},
})

func init() {
	if err := config.Register(section); err != nil {
		panic(err)
	}
}

// Entries are cfg's Sentinel deployments.
func Entries(cfg *config.Config) []Set { return config.Entries[Set](cfg, Key) }

// SetEntries replaces cfg's Sentinel deployments, for configs built in
// code; cfg.Complete then completes them.
func SetEntries(cfg *config.Config, sets []Set) { config.SetEntries(cfg, Key, sets) }

// At is the module's deployment whose sentinels are at addrs, called name.
// Whether the module allows addrs is CheckTarget's to say.
func (s Set) At(name string, addrs []string) Set {
	s.Name, s.Sentinels = name, addrs
	return s
}

// CheckTarget reports whether the module allows the sentinels' addresses.
// The data nodes are the ones the sentinels report, not the target's.
func (s Set) CheckTarget() error {
	return config.CheckAllowedTargets(s.AllowedTargets, s.AllowAnyTarget, s.Sentinels)
}

// credentials are what secrets a Sentinel module carries, by their keys:
// those of both connections, the nodes' going where the sentinels say the
// nodes are.
func (s Set) credentials() []string {
	return append(s.SentinelConnection.credentials(sentinelConnectionKey), s.NodeConnection.credentials(nodeConnectionKey)...)
}

func (c Connection) credentials(key string) []string {
	var keys []string
	if c.Username != "" {
		keys = append(keys, key+".username")
	}
	if c.Password.IsSet() {
		keys = append(keys, key+".password")
	}
	for _, k := range c.TLS.Credentials() {
		keys = append(keys, key+"."+k)
	}
	return keys
}

// moduleTLS is what config checks of a module's TLS: it takes one TLS, so
// the two connections' are joined, and a server name or a skipped
// verification in either is refused as config refuses them in one.
func (s Set) moduleTLS() config.TLS {
	t := s.SentinelConnection.TLS
	if t.ServerName == "" {
		t.ServerName = s.NodeConnection.TLS.ServerName
	}
	t.InsecureSkipVerify = t.InsecureSkipVerify || s.NodeConnection.TLS.InsecureSkipVerify
	return t
}

// Fingerprint identifies the deployment's settings together with the
// current contents of both connections' TLS files and passwords. It reads
// those files and variables on every call.
func (s Set) Fingerprint() (string, error) {
	// config.Fingerprint reads one TLS: the nodes' files are digested
	// with its result.
	fp, err := config.Fingerprint(s, s.SentinelConnection.TLS, s.SentinelConnection.Password, s.NodeConnection.Password)
	if err != nil {
		return "", err
	}
	return config.KeyedDigest(append([][]byte{[]byte(fp)}, s.NodeConnection.TLS.FileContents()...)...), nil
}

// ClusterName is the entry's name, the sentinel_cluster label
// (system.Settings).
func (s Set) ClusterName() string { return s.Name }

// Timing is the refresh interval and the bound on one refresh
// (system.Settings).
func (s Set) Timing() (interval, timeout time.Duration) {
	return s.RefreshInterval, s.RefreshTimeout
}

// MasterWatched reports whether the master called name is watched: every
// master is when masters is empty.
func (s Set) MasterWatched(name string) bool {
	return len(s.Masters) == 0 || slices.Contains(s.Masters, name)
}
