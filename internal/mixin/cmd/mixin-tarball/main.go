// Command mixin-tarball packs the monitoring mixin (mixin/ and the rule and
// dashboard files it imports) into <out>/failover_exporter-mixin-<version>.tar.gz.
// goreleaser runs it as a before hook and ships the file with the release:
//
//	go run ./internal/mixin/cmd/mixin-tarball -version 1.2.3 -mtime 1700000000 -out build/mixin
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/failover-exporter/failover_exporter/internal/mixin"
)

// prefix is the directory the tarball unpacks into; it carries no version so
// that jsonnet imports (failover_exporter-mixin/mixin/mixin.libsonnet) survive upgrades.
const prefix = "failover_exporter-mixin"

func main() {
	root := flag.String("root", ".", "repository root")
	version := flag.String("version", "", "release version, part of the file name")
	mtime := flag.Int64("mtime", 0, "modification time of the packed files, in Unix seconds (goreleaser: {{ .CommitTimestamp }})")
	out := flag.String("out", "build/mixin", "output directory; older mixin tarballs in it are removed")
	flag.Parse()
	if *version == "" {
		fmt.Fprintln(os.Stderr, "mixin-tarball: -version is required")
		os.Exit(2)
	}
	path, err := run(*root, *version, time.Unix(*mtime, 0).UTC(), *out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mixin-tarball:", err)
		os.Exit(1)
	}
	fmt.Println(path)
}

func run(root, version string, modTime time.Time, outDir string) (string, error) {
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return "", err
	}
	// One tarball per release: goreleaser's extra_files glob takes them all.
	old, err := filepath.Glob(filepath.Join(outDir, prefix+"-*.tar.gz"))
	if err != nil {
		return "", err
	}
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			return "", err
		}
	}
	path := filepath.Join(outDir, prefix+"-"+version+".tar.gz")
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	if err := mixin.WriteTarball(f, root, prefix, modTime); err != nil {
		f.Close()
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return path, nil
}
