// Package settings is the mirrors section of the config file: a
// MirrorMaker 2 flow's settings (Flow), their defaults and checks, and its
// fingerprint. A flow names clusters of the kafka section, whose settings
// it connects with. Importing the package registers the section with
// config (and, through the kafka settings, the kafka section).
package settings

import (
	"sync"

	"github.com/failover-exporter/failover_exporter/config"
	kafkasettings "github.com/failover-exporter/failover_exporter/systems/kafka/settings"
)

// Key is the file's key of the flows.
const Key = "mirrors"

// Rank places the section after kafka's and redis's in config's table:
// its check reads the kafka list, completed before it.
const Rank = 3

// section is the mirrors list of the file. Its check reads the kafka
// list, completed before it.
var section = config.NewSection(config.SectionSpec[Flow]{
	Key: Key, Noun: "mirror", Rank: Rank,
	// The messages for an unknown key name the types as they were named
	// when they were config's.
	TypeNames: map[string]string{"settings.Flow": "config.Mirror", "settings.Connect": "config.MirrorConnect"},
	Defaults:  (*Flow).applyDefaults,
	Name:      func(m *Flow) string { return m.Name },
	Validate: func(cfg *config.Config) func(*Flow) error {
		kafka := map[string]kafkasettings.Cluster{}
		for _, k := range kafkasettings.Clusters(cfg) {
			kafka[k.Name] = k
		}
		known := sync.OnceValue(func() string { return listNames(kafka) })
		return func(m *Flow) error { return m.validate(kafka, known) }
	},
})

func init() {
	if err := config.Register(section); err != nil {
		panic(err)
	}
}

// Flows are cfg's mirror flows.
func Flows(cfg *config.Config) []Flow { return config.Entries[Flow](cfg, Key) }

// SetFlows replaces cfg's mirror flows, for configs built in code;
// cfg.Complete then completes them.
func SetFlows(cfg *config.Config, flows []Flow) { config.SetEntries(cfg, Key, flows) }
