package exposition

import (
	"bytes"
	"compress/gzip"
	"hash/crc32"
	"io"
	"math/rand"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func TestCRCShiftCombinesChecksums(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, sizes := range [][2]int{{0, 0}, {0, 5}, {5, 0}, {1, 1}, {3, 1000}, {70_000, 33}, {1 << 20, (1 << 20) + 17}} {
		a, b := make([]byte, sizes[0]), make([]byte, sizes[1])
		rng.Read(a)
		rng.Read(b)
		shift := crcShift(int64(len(b)))
		got := shift.times(crc32.ChecksumIEEE(a)) ^ crc32.ChecksumIEEE(b)
		if want := crc32.ChecksumIEEE(append(append([]byte(nil), a...), b...)); got != want {
			t.Errorf("sizes %v: combined CRC %08x, want %08x", sizes, got, want)
		}
	}
}

// twoClusters renders a set for two sources, large enough that families
// span many line buffers and deflate blocks.
func twoClusters(t *testing.T) (*Set, []*Rendered) {
	t.Helper()
	set := &Set{}
	leader := set.Gauge("demo_partition_leader", "Leader.", "demo_cluster", "topic", "partition")
	isr := set.Gauge("demo_partition_isr", "ISR.", "demo_cluster", "topic", "partition")
	changes := set.Counter("demo_changes_total", "Changes.", "demo_cluster")
	var rendered []*Rendered
	for _, cluster := range []string{"a", "b"} {
		emit := func(s Sink) {
			labels := []string{cluster, "", ""}
			for p := 0; p < 20_000; p++ {
				labels[1], labels[2] = "topic-"+strconv.Itoa(p/100), strconv.Itoa(p%100)
				s.Add(leader, float64(p%3+1), labels...)
				s.Add(isr, 3, labels...)
			}
			s.Add(changes, 0.5, cluster)
		}
		first := set.Render(nil, emit)
		// Render again sized from the first, as a refresh does.
		rendered = append(rendered, set.Render(first, emit))
	}
	return set, rendered
}

func TestGzipAndPlainResponsesAgree(t *testing.T) {
	set, rendered := twoClusters(t)
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "demo_build_info", Help: "Build."}, func() float64 { return 1 }))
	h := Handler(reg, []TextWriter{setWriter{set, rendered}}, func(msg string, err error) { t.Errorf("%s: %v", msg, err) })

	plain := httptest.NewRecorder()
	h.ServeHTTP(plain, httptest.NewRequest("GET", "/metrics", nil))
	if plain.Header().Get("Content-Encoding") != "" {
		t.Fatal("plain request answered with an encoding")
	}

	req := httptest.NewRequest("GET", "/metrics", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	compressed := httptest.NewRecorder()
	h.ServeHTTP(compressed, req)
	if compressed.Header().Get("Content-Encoding") != "gzip" {
		t.Fatal("gzip request answered without gzip")
	}
	// compress/gzip checks the trailer's CRC-32 and size, and is what
	// Prometheus uses to read a scrape. One member, as curl needs.
	body := bytes.NewReader(compressed.Body.Bytes())
	zr, err := gzip.NewReader(body)
	if err != nil {
		t.Fatal(err)
	}
	zr.Multistream(false)
	unzipped, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("gzip response does not decompress: %v", err)
	}
	if body.Len() != 0 {
		t.Errorf("%d bytes after the first gzip member", body.Len())
	}
	if !bytes.Equal(unzipped, plain.Body.Bytes()) {
		t.Fatalf("gzip response (%d bytes) differs from plain one (%d bytes)", len(unzipped), plain.Body.Len())
	}
	if compressed.Body.Len()*10 > plain.Body.Len() {
		t.Errorf("compressed %d bytes of %d only", compressed.Body.Len(), plain.Body.Len())
	}

	// Prometheus's own parser reads every series, families unsplit.
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(plain.Body.Bytes()))
	if err != nil {
		t.Fatalf("text parser: %v", err)
	}
	counts := map[string]int{}
	for name, mf := range families {
		counts[name] = len(mf.GetMetric())
	}
	want := map[string]int{"demo_build_info": 1, "demo_partition_leader": 40_000, "demo_partition_isr": 40_000, "demo_changes_total": 2}
	for name, n := range want {
		if counts[name] != n {
			t.Errorf("%s: %d series, want %d", name, counts[name], n)
		}
	}
	if len(counts) != len(want) {
		t.Errorf("families %v, want %v", counts, want)
	}
	if headers := strings.Count(plain.Body.String(), "# TYPE demo_partition_leader gauge\n"); headers != 1 {
		t.Errorf("leader family has %d TYPE lines, want 1", headers)
	}
}

func TestEmptyResponseIsValidGzip(t *testing.T) {
	h := Handler(prometheus.NewRegistry(), nil, func(msg string, err error) { t.Errorf("%s: %v", msg, err) })
	req := httptest.NewRequest("GET", "/metrics", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	zr, err := gzip.NewReader(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	if body, err := io.ReadAll(zr); err != nil || len(body) != 0 {
		t.Errorf("body %q, err %v; want empty", body, err)
	}
}

func TestRenderRejectsWrongLabelCount(t *testing.T) {
	set := &Set{}
	d := set.Gauge("demo", "Demo.", "a", "b")
	defer func() {
		if recover() == nil {
			t.Error("no panic for one label value of two")
		}
	}()
	set.Render(nil, func(s Sink) { s.Add(d, 1, "only-one") })
}
