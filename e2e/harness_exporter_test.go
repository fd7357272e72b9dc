package e2e

import (
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/failover-exporter/failover_exporter/internal/exportertest"
)

// Running the exporter's binary as a user would, and the addresses and
// bodies the tests hand it and read back.

// deadAddr is a loopback port with nothing listening.
func deadAddr(t *testing.T) string {
	return fmt.Sprintf("127.0.0.1:%d", exportertest.FreePort(t))
}

// runExporter runs the binary to completion and returns its exit code and
// combined output.
func runExporter(t *testing.T, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(exportertest.Binary(t), args...)
	out, err := cmd.CombinedOutput()
	if exit, ok := err.(*exec.ExitError); ok {
		return exit.ExitCode(), string(out)
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, string(out)
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String()
		}
	}
}
