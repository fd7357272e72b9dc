// Command chartfiles writes the Helm chart's generated files (files/: the
// alert rules and dashboards, copied from prometheus/ and grafana/), which
// `helm install ./charts/failover-exporter` needs; `make chart-files` runs
// it from the repository's root:
//
//	go run ./internal/chart/cmd/chartfiles
//
// The packaged chart (cmd/chartpkg, attached to each release) has them
// already.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/failover-exporter/failover_exporter/internal/chart/chartfiles"
)

func main() {
	dir := flag.String("chart", chartfiles.Chart, "chart directory")
	flag.Parse()
	if err := chartfiles.Write(*dir); err != nil {
		fmt.Fprintln(os.Stderr, "chartfiles:", err)
		os.Exit(1)
	}
}
