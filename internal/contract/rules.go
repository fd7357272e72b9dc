package contract

import (
	"fmt"
	"os"

	"gopkg.in/yaml.v3"
)

// Rule is one alerting or recording rule of a Prometheus rules file.
type Rule struct {
	Alert       string            `yaml:"alert"`
	Record      string            `yaml:"record"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

// RuleGroup is a named group of rules.
type RuleGroup struct {
	Name  string `yaml:"name"`
	Rules []Rule `yaml:"rules"`
}

// LoadRules reads a Prometheus rules file.
func LoadRules(path string) ([]RuleGroup, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read rules: %w", err)
	}
	var file struct {
		Groups []RuleGroup `yaml:"groups"`
	}
	if err := yaml.Unmarshal(raw, &file); err != nil {
		return nil, fmt.Errorf("decode rules %s: %w", path, err)
	}
	return file.Groups, nil
}
