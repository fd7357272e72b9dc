// Package chartfiles makes the Helm chart's generated files: files/ of
// charts/failover-exporter holds the alert rules and the dashboards, whose
// sources live outside the chart (prometheus/alerts.yml and
// grafana/dashboards/), because Helm reads no file outside a chart. They are
// not committed: the chart's package (internal/chart.Package) takes them from
// their sources, and Write puts them in the chart's directory for `helm
// install ./charts/failover-exporter` and the tests that render it.
//
// It imports no Helm package, so `make chart-files` builds in seconds.
package chartfiles

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// Chart is the chart's directory, relative to the repository's root.
const Chart = "charts/failover-exporter"

// Dir is the chart's folder of generated files, relative to the chart.
const Dir = "files"

// Read returns the generated files of the chart in chartDir, by their name
// in the chart (files/alerts.yml, files/dashboards/NAME.json), read from
// their sources in the repository that holds the chart
// (chartDir/../../prometheus and chartDir/../../grafana).
func Read(chartDir string) (map[string][]byte, error) {
	root := filepath.Join(chartDir, "..", "..")
	sources := map[string]string{
		Dir + "/alerts.yml": filepath.Join(root, "prometheus", "alerts.yml"),
	}
	dashboards, err := filepath.Glob(filepath.Join(root, "grafana", "dashboards", "*.json"))
	if err != nil {
		return nil, err
	}
	if len(dashboards) == 0 {
		return nil, fmt.Errorf("no dashboards in %s", filepath.Join(root, "grafana", "dashboards"))
	}
	for _, f := range dashboards {
		sources[Dir+"/dashboards/"+filepath.Base(f)] = f
	}
	out := make(map[string][]byte, len(sources))
	for name, src := range sources {
		data, err := os.ReadFile(src)
		if err != nil {
			return nil, fmt.Errorf("source of the chart's %s: %w", name, err)
		}
		out[name] = data
	}
	return out, nil
}

// Names returns the names of files, sorted.
func Names(files map[string][]byte) []string {
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// Write writes the generated files into chartDir/files and removes the
// dashboards there whose source is gone. A file already equal to its
// source is left alone; another is replaced by a rename, so a test of
// another package reading the chart at the same time sees the old bytes or
// the new, never half a file. The temporary files are written outside the
// chart (Helm's loader would read them).
func Write(chartDir string) error {
	files, err := Read(chartDir)
	if err != nil {
		return err
	}
	stale, _ := filepath.Glob(filepath.Join(chartDir, Dir, "dashboards", "*.json"))
	for _, f := range stale {
		if _, ok := files[Dir+"/dashboards/"+filepath.Base(f)]; !ok {
			if err := os.Remove(f); err != nil {
				return err
			}
		}
	}
	for _, name := range Names(files) {
		if err := writeIfChanged(chartDir, name, files[name]); err != nil {
			return err
		}
	}
	return nil
}

func writeIfChanged(chartDir, name string, data []byte) error {
	path := filepath.Join(chartDir, filepath.FromSlash(name))
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(chartDir), ".chartfiles-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write the chart's %s: %w", name, err)
	}
	return nil
}
