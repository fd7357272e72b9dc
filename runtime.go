package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"strconv"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
)

// defaultGCPercent is the GOGC the exporter runs with unless GOGC is set.
// Its heap is mostly garbage of one refresh (every node's replies, every
// partition's metadata) that is dead by the next one, and Go lets the heap
// grow to (1 + GOGC/100) × the live heap before collecting. At 100 the peak
// is twice what the exporter keeps; at 50 it is one and a half times, for
// one more short collection per refresh (see BENCHMARKS.md, "GOGC").
const defaultGCPercent = 50

// tuneRuntime sets the garbage collector's target and turns off heap-profile
// sampling when nobody can read the profile.
func tuneRuntime(enablePprof bool, logger log.Logger) {
	gogc := os.Getenv("GOGC")
	if gogc == "" {
		debug.SetGCPercent(defaultGCPercent)
		gogc = strconv.Itoa(defaultGCPercent) + " (default; set GOGC to change)"
	}
	if !enablePprof {
		// Sampling keeps a table of allocation stacks (about 1.5 MB with a
		// 100-node Redis Cluster) for /debug/pprof/heap, which is served
		// only with --web.enable-pprof.
		runtime.MemProfileRate = 0
	}
	level.Debug(logger).Log("msg", "go runtime", "gogc", gogc, "heap_profile_sampling", enablePprof)
}
