// Command chartpkg packages charts/failover-exporter as a .tgz, as `helm
// package` does, with Helm's Go library (there is no helm binary on the
// build machines). goreleaser runs it as a before hook:
//
//	go run ./internal/chart/cmd/chartpkg -version 1.2.3 -out build/chart
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/failover-exporter/failover_exporter/internal/chart"
)

func main() {
	dir := flag.String("chart", chart.Path, "chart directory")
	version := flag.String("version", "", "chart version and appVersion (default: as in Chart.yaml)")
	out := flag.String("out", "build/chart", "directory to write the .tgz to (its old .tgz files are removed)")
	flag.Parse()
	path, err := chart.Package(*dir, *version, *out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chartpkg:", err)
		os.Exit(1)
	}
	fmt.Println(path)
}
