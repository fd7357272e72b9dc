// Package mixin evaluates the monitoring mixin in mixin/ (jsonnet, see
// mixin/README.md) and packs it, with the rule and dashboard files it
// imports, into the tarball shipped with each release.
package mixin

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/go-jsonnet"
)

// Dir is the mixin's directory and Entry its main file, relative to the
// repository root.
const (
	Dir   = "mixin"
	Entry = "mixin.libsonnet"
)

// Output is what the mixin exposes, as JSON.
type Output struct {
	Alerts     json.RawMessage            `json:"prometheusAlerts"`
	Rules      json.RawMessage            `json:"prometheusRules"`
	Dashboards map[string]json.RawMessage `json:"grafanaDashboards"`
}

// Evaluate evaluates the mixin under root with config merged into its
// _config (nil for the defaults), as a kube-prometheus user's
// `(import 'mixin.libsonnet') + { _config+:: {...} }` would.
func Evaluate(root string, config map[string]any) (*Output, error) {
	if config == nil {
		config = map[string]any{}
	}
	configJSON, err := json.Marshal(config)
	if err != nil {
		return nil, fmt.Errorf("encode mixin config: %w", err)
	}
	vm := jsonnet.MakeVM()
	vm.Importer(&jsonnet.FileImporter{})
	vm.ExtCode("config", string(configJSON))
	const snippet = `
local mixin = (import '` + Entry + `') + { _config+:: std.extVar('config') };
{
  prometheusAlerts: mixin.prometheusAlerts,
  prometheusRules: mixin.prometheusRules,
  grafanaDashboards: mixin.grafanaDashboards,
}`
	// The snippet is evaluated as if it were a file in mixin/, so that its
	// import resolves as a user's would.
	out, err := vm.EvaluateSnippet(filepath.Join(root, Dir, "evaluate.jsonnet"), snippet)
	if err != nil {
		return nil, fmt.Errorf("evaluate %s: %w", filepath.Join(Dir, Entry), err)
	}
	var result Output
	if err := json.Unmarshal([]byte(out), &result); err != nil {
		return nil, fmt.Errorf("decode mixin output: %w", err)
	}
	return &result, nil
}

// Files returns the files a packaged mixin needs, relative to root and
// sorted: everything under mixin/, every file it imports from elsewhere in
// the repository (the rules and dashboards), so that the imports resolve
// unchanged when the files keep their relative paths, and the LICENSE.
func Files(root string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(filepath.Join(root, Dir), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		files = append(files, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", Dir, err)
	}
	vm := jsonnet.MakeVM()
	vm.Importer(&jsonnet.FileImporter{})
	deps, err := vm.FindDependencies(filepath.Join(root, Dir)+string(filepath.Separator), []string{Entry})
	if err != nil {
		return nil, fmt.Errorf("find the imports of %s: %w", Entry, err)
	}
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	for _, dep := range deps {
		abs, err := filepath.Abs(dep)
		if err != nil {
			return nil, err
		}
		rel, err := filepath.Rel(absRoot, abs)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return nil, fmt.Errorf("%s imports %s, outside the repository", Entry, dep)
		}
		files = append(files, filepath.ToSlash(rel))
	}
	// The tarball is a redistribution of the rule and dashboard files.
	if _, err := os.Stat(filepath.Join(root, "LICENSE")); err == nil {
		files = append(files, "LICENSE")
	}
	slices.Sort(files)
	return slices.Compact(files), nil
}

// WriteTarball writes the files of Files as a gzipped tar, each under
// prefix/ with its path relative to root (mixin/mixin.libsonnet,
// prometheus/alerts.yml, ...), dated modTime so that a build is reproducible.
func WriteTarball(w io.Writer, root, prefix string, modTime time.Time) error {
	files, err := Files(root)
	if err != nil {
		return err
	}
	gz := gzip.NewWriter(w)
	gz.ModTime = modTime
	tw := tar.NewWriter(gz)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: prefix + "/", Mode: 0o755, ModTime: modTime, Format: tar.FormatPAX}); err != nil {
		return fmt.Errorf("tar %s: %w", prefix, err)
	}
	dirs := map[string]bool{}
	for _, name := range files {
		// Directory entries first, so every extractor creates them with sane modes.
		var parents []string
		for dir := filepath.ToSlash(filepath.Dir(name)); dir != "." && !dirs[dir]; dir = filepath.ToSlash(filepath.Dir(dir)) {
			dirs[dir] = true
			parents = append(parents, dir)
		}
		slices.Reverse(parents)
		for _, dir := range parents {
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: prefix + "/" + dir + "/", Mode: 0o755, ModTime: modTime, Format: tar.FormatPAX}); err != nil {
				return fmt.Errorf("tar %s: %w", dir, err)
			}
		}
		content, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
		if err != nil {
			return fmt.Errorf("read %s: %w", name, err)
		}
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: prefix + "/" + name, Mode: 0o644, Size: int64(len(content)), ModTime: modTime, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("tar %s: %w", name, err)
		}
		if _, err := tw.Write(content); err != nil {
			return fmt.Errorf("tar %s: %w", name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("close tar: %w", err)
	}
	if err := gz.Close(); err != nil {
		return fmt.Errorf("close gzip: %w", err)
	}
	return nil
}
