// Package watchtest builds watchers for the collectors' unit tests.
package watchtest

import (
	"context"
	"time"

	"github.com/go-kit/log"

	"github.com/failover-exporter/failover_exporter/collector/watch"
)

// Static returns a watcher of the cluster name that has refreshed once and
// holds snap, or err: what a collector reads from a watcher, without a
// cluster behind it. Its interval (a minute) never elapses in a test.
func Static[S any](name string, snap *S, err error) *watch.Watcher[S] {
	w := watch.New(name, time.Minute, time.Second, func(context.Context, *S) (*S, error) {
		return snap, err
	}, log.NewNopLogger())
	w.RefreshOnce(context.Background())
	return w
}
