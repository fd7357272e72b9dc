package mirror

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/failover-exporter/failover_exporter/systems/mirror/settings"
)

// TestConnectErrorsHideURLCredentials: the config check refuses a
// connect.url with a query, fragment or user:password (issue 33 item 10),
// and should one reach the reader anyway, the refresh error, which is
// logged, shows the URL without them.
func TestConnectErrorsHideURLCredentials(t *testing.T) {
	srv, _ := connectServer(t, http.StatusOK, "{}")
	srv.Close()
	for _, secretURL := range []string{
		strings.Replace(srv.URL, "http://", "http://u:s3cret@", 1),
		srv.URL + "/?token=s3cret",
		srv.URL + "/#s3cret",
	} {
		r := testConnectReader(t, settings.Connect{URL: secretURL})
		_, err := r.read(context.Background())
		if err == nil || !strings.Contains(err.Error(), "connect GET /connectors") {
			t.Fatalf("%s: closed server: %v", secretURL, err)
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("the error shows the URL's secret: %v", err)
		}
	}
}
