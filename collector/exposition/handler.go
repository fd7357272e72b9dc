package exposition

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// TextWriter adds metric families rendered ahead of the scrape to a
// response. Families must not overlap with those of the registry or other
// writers.
type TextWriter interface {
	AppendText(st *Stream)
}

// ClusterAppender adds one cluster's series to a response, reporting
// whether it serves that cluster (Collector.AppendClusterText).
type ClusterAppender interface {
	AppendClusterText(st *Stream, name string) bool
}

// ClusterWriter is one cluster of c, as a TextWriter: what /probe serves
// of a collector. A cluster removed since is left out of the response.
func ClusterWriter(c ClusterAppender, cluster string) TextWriter {
	return clusterWriter{c, cluster}
}

type clusterWriter struct {
	c       ClusterAppender
	cluster string
}

func (w clusterWriter) AppendText(st *Stream) { w.c.AppendClusterText(st, w.cluster) }

// ErrorLogger receives errors that happen while serving a scrape.
type ErrorLogger func(msg string, err error)

// Handler serves the registry's families followed by the writers' in text
// exposition format 0.0.4, gzip-compressed when the client accepts it.
// Like promhttp with ContinueOnError, a failing collector is logged and the
// rest is still served.
//
// The registry holds the few small families made at scrape time (Go and
// process metrics, self metrics); they are encoded per scrape. The writers'
// families are already compressed: gzip clients get those bytes as they
// are, plain clients get them decompressed on the fly.
func Handler(g prometheus.Gatherer, writers []TextWriter, logError ErrorLogger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		serve(w, r, g, writers, logError)
	})
}

// TargetResolver finds the writers of the target a /probe request names,
// or an error that tells the client what is wrong with the request.
type TargetResolver func(r *http.Request) ([]TextWriter, error)

// ProbeHandler serves one target's series, as Handler serves everything
// (pre-rendered, gzip-compressed when the client accepts it, never waiting
// on a cluster), in the multi-target exporter pattern: each target is its
// own Prometheus target, with its own up, scrape duration and sample
// limit. The exporter's own series are not repeated in each target; they
// stay on /metrics. A request resolve refuses is answered with its error,
// 400 unless the error has a StatusCode() of its own, with a Retry-After
// header when it has a RetryAfter().
func ProbeHandler(resolve TargetResolver, logError ErrorLogger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writers, err := resolve(r)
		if err != nil {
			status := http.StatusBadRequest
			var coded interface{ StatusCode() int }
			if errors.As(err, &coded) {
				status = coded.StatusCode()
			}
			var later interface{ RetryAfter() time.Duration }
			if errors.As(err, &later) {
				w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(later.RetryAfter().Seconds()))))
			}
			http.Error(w, err.Error(), status)
			return
		}
		serve(w, r, prometheus.Gatherers(nil), writers, logError)
	})
}

// serve writes g's families and the writers' as one response.
func serve(w http.ResponseWriter, r *http.Request, g prometheus.Gatherer, writers []TextWriter, logError ErrorLogger) {
	families, gatherErr := g.Gather()
	if gatherErr != nil {
		logError("error gathering metrics", gatherErr)
	}
	contentType := expfmt.NewFormat(expfmt.TypeTextPlain)
	w.Header().Set("Content-Type", string(contentType))
	// The body depends on Accept-Encoding; caches must key on it.
	w.Header().Add("Vary", "Accept-Encoding")

	var registryText bytes.Buffer
	enc := expfmt.NewEncoder(&registryText, contentType)
	for _, mf := range families {
		if err := enc.Encode(mf); err != nil {
			logError("error encoding metric family", err)
			break
		}
	}
	var st Stream
	for _, tw := range writers {
		tw.AppendText(&st)
	}

	buf := bufio.NewWriterSize(w, 64<<10)
	var err error
	if acceptsGzip(r) {
		w.Header().Set("Content-Encoding", "gzip")
		registry := compressFragment(registryText.Bytes())
		err = st.writeGzip(buf, &registry)
	} else if _, err = buf.Write(registryText.Bytes()); err == nil {
		err = st.writePlain(buf)
	}
	if err == nil {
		err = buf.Flush()
	}
	if err != nil {
		logError("error writing metrics", fmt.Errorf("write text: %w", err))
	}
}

// acceptsGzip reports whether the request's Accept-Encoding allows gzip
// (listed without a zero quality).
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		enc, params, _ := strings.Cut(part, ";")
		if strings.TrimSpace(enc) != "gzip" {
			continue
		}
		q, ok := strings.CutPrefix(strings.TrimSpace(params), "q=")
		if !ok {
			return true
		}
		v, err := strconv.ParseFloat(q, 64)
		return err == nil && v > 0
	}
	return false
}
