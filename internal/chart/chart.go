// Package chart renders, lints and packages the Helm chart in
// charts/failover-exporter with Helm's own Go library, for its tests (no
// cluster, no helm binary) and for the release (cmd/chartpkg). The chart's
// files/ is generated (chartfiles): Package takes it from its sources, Lint
// and Load read the chart's directory as it is.
package chart

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint/support"
	"helm.sh/helm/v3/pkg/releaseutil"

	"github.com/failover-exporter/failover_exporter/internal/chart/chartfiles"
)

// Path is the chart's directory, relative to the repository root.
const Path = chartfiles.Chart

// kubeVersion is the Kubernetes version charts are rendered for: the
// oldest the chart's kubeVersion constraint admits.
var kubeVersion = &chartutil.KubeVersion{Version: "v1.25.0", Major: "1", Minor: "25"}

// Rendered is the output of one `helm template`.
type Rendered struct {
	// Docs are the rendered objects, one YAML document each, in the order
	// Helm installs them.
	Docs []Doc
	// Notes is NOTES.txt rendered.
	Notes string
}

// Doc is one rendered document and the template it came from.
type Doc struct {
	Template string
	YAML     string
}

// Load reads the chart from its directory (honouring .helmignore).
func Load(dir string) (*chart.Chart, error) {
	ch, err := loader.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("load chart %s: %w", dir, err)
	}
	return ch, nil
}

// ReadValues reads a values file; an empty path gives no values (the
// chart's defaults).
func ReadValues(path string) (map[string]any, error) {
	if path == "" {
		return map[string]any{}, nil
	}
	vals, err := chartutil.ReadValuesFile(path)
	if err != nil {
		return nil, fmt.Errorf("values %s: %w", path, err)
	}
	return vals.AsMap(), nil
}

// Lint runs `helm lint --strict` on the chart directory with vals: every
// warning is an error.
func Lint(dir string, vals map[string]any) error {
	lint := action.NewLint()
	lint.Strict = true
	lint.KubeVersion = kubeVersion
	result := lint.Run([]string{dir}, vals)
	var errs []error
	for _, msg := range result.Messages {
		if msg.Severity >= support.WarningSev {
			errs = append(errs, fmt.Errorf("lint: %s", msg))
		}
	}
	if len(errs) == 0 {
		errs = result.Errors
	}
	return errors.Join(errs...)
}

// Render is `helm template RELEASE CHART -n NAMESPACE -f VALUES`: an install
// run dry, on the client only.
func Render(ch *chart.Chart, release, namespace string, vals map[string]any) (*Rendered, error) {
	cfg := &action.Configuration{Log: func(string, ...any) {}}
	install := action.NewInstall(cfg)
	install.DryRun = true
	install.ClientOnly = true
	install.Replace = true
	install.ReleaseName = release
	install.Namespace = namespace
	install.KubeVersion = kubeVersion
	rel, err := install.Run(ch, vals)
	if err != nil {
		return nil, fmt.Errorf("render chart: %w", err)
	}
	split := releaseutil.SplitManifests(rel.Manifest)
	keys := make([]string, 0, len(split))
	for k := range split {
		keys = append(keys, k)
	}
	// SplitManifests names them manifest-N: keep the install order.
	sort.Slice(keys, func(i, j int) bool {
		return manifestIndex(keys[i]) < manifestIndex(keys[j])
	})
	out := &Rendered{Notes: rel.Info.Notes}
	for _, k := range keys {
		doc := split[k]
		template := ""
		if first, _, ok := strings.Cut(doc, "\n"); ok && strings.HasPrefix(first, "# Source: ") {
			template = strings.TrimPrefix(first, "# Source: ")
		}
		if strings.TrimSpace(doc) == "" {
			continue
		}
		out.Docs = append(out.Docs, Doc{Template: template, YAML: doc})
	}
	return out, nil
}

func manifestIndex(key string) int {
	var n int
	fmt.Sscanf(key, "manifest-%d", &n)
	return n
}

// Package writes the chart, with version and appVersion set to version, as
// outDir/failover-exporter-VERSION.tgz (the `helm package` format), after
// removing the .tgz files already there, and returns its path. Its files/
// is read from the sources (chartfiles.Read), whatever the chart's
// directory holds there.
func Package(dir, version, outDir string) (string, error) {
	ch, err := Load(dir)
	if err != nil {
		return "", err
	}
	generated, err := chartfiles.Read(dir)
	if err != nil {
		return "", err
	}
	replaceGenerated(ch, generated)
	if version != "" {
		ch.Metadata.Version = strings.TrimPrefix(version, "v")
		ch.Metadata.AppVersion = strings.TrimPrefix(version, "v")
	}
	if err := ch.Validate(); err != nil {
		return "", fmt.Errorf("chart %s: %w", dir, err)
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return "", err
	}
	old, _ := filepath.Glob(filepath.Join(outDir, "*.tgz"))
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			return "", err
		}
	}
	path, err := chartutil.Save(ch, outDir)
	if err != nil {
		return "", fmt.Errorf("package chart: %w", err)
	}
	return path, nil
}

// replaceGenerated puts generated in ch's files/ in place of what the
// chart's directory held there.
func replaceGenerated(ch *chart.Chart, generated map[string][]byte) {
	kept := ch.Files[:0]
	for _, f := range ch.Files {
		if !strings.HasPrefix(f.Name, chartfiles.Dir+"/") {
			kept = append(kept, f)
		}
	}
	ch.Files = kept
	for _, name := range chartfiles.Names(generated) {
		ch.Files = append(ch.Files, &chart.File{Name: name, Data: generated[name]})
	}
}
