package exposition

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// TextWriter writes metric families in text exposition format. Families
// must not overlap with those of the registry or other writers.
type TextWriter interface {
	WriteText(w io.Writer) error
}

// ErrorLogger receives errors that happen while serving a scrape.
type ErrorLogger func(msg string, err error)

var gzipPool = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return w
}}

// Handler serves the registry's families followed by the writers' in text
// exposition format 0.0.4, gzip-compressed when the client accepts it.
// Like promhttp with ContinueOnError, a failing collector is logged and the
// rest is still served.
func Handler(g prometheus.Gatherer, writers []TextWriter, logError ErrorLogger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		families, gatherErr := g.Gather()
		if gatherErr != nil {
			logError("error gathering metrics", gatherErr)
		}
		contentType := expfmt.NewFormat(expfmt.TypeTextPlain)
		w.Header().Set("Content-Type", string(contentType))
		// The body depends on Accept-Encoding; caches must key on it.
		w.Header().Add("Vary", "Accept-Encoding")

		var out io.Writer = w
		if acceptsGzip(r) {
			w.Header().Set("Content-Encoding", "gzip")
			gz := gzipPool.Get().(*gzip.Writer)
			gz.Reset(w)
			defer func() {
				_ = gz.Close()
				gzipPool.Put(gz)
			}()
			out = gz
		}
		buf := bufio.NewWriterSize(out, 64<<10)
		enc := expfmt.NewEncoder(buf, contentType)
		for _, mf := range families {
			if err := enc.Encode(mf); err != nil {
				logError("error encoding metric family", err)
				return
			}
		}
		for _, tw := range writers {
			if err := tw.WriteText(buf); err != nil {
				logError("error writing metrics", fmt.Errorf("write text: %w", err))
				return
			}
		}
		if err := buf.Flush(); err != nil {
			logError("error writing metrics", err)
		}
	})
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
