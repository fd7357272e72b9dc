package chartfiles

import (
	"os"
	"path/filepath"
	"testing"
)

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Write copies the sources into files/, replaces what differs, removes a
// dashboard whose source is gone and leaves nothing else in the chart.
func TestWrite(t *testing.T) {
	root := t.TempDir()
	chart := filepath.Join(root, Chart)
	write(t, filepath.Join(root, "prometheus", "alerts.yml"), "groups: [a]\n")
	write(t, filepath.Join(root, "grafana", "dashboards", "a.json"), "{\"a\": 1}\n")
	write(t, filepath.Join(root, "grafana", "dashboards", "b.json"), "{\"b\": 2}\n")
	write(t, filepath.Join(chart, "Chart.yaml"), "name: x\n")
	write(t, filepath.Join(chart, Dir, "alerts.yml"), "groups: [old]\n")
	write(t, filepath.Join(chart, Dir, "dashboards", "gone.json"), "{}\n")
	for range 2 {
		if err := Write(chart); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]string{
		"Chart.yaml":              "name: x\n",
		"files/alerts.yml":        "groups: [a]\n",
		"files/dashboards/a.json": "{\"a\": 1}\n",
		"files/dashboards/b.json": "{\"b\": 2}\n",
	}
	got := map[string]string{}
	err := filepath.WalkDir(filepath.Dir(chart), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		rel, _ := filepath.Rel(chart, path)
		got[filepath.ToSlash(rel)] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Errorf("files %v, want %v", got, want)
	}
	for name, data := range want {
		if got[name] != data {
			t.Errorf("%s = %q, want %q", name, got[name], data)
		}
	}
}

func TestReadWithoutDashboards(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "prometheus", "alerts.yml"), "groups: []\n")
	if _, err := Read(filepath.Join(root, Chart)); err == nil {
		t.Error("no error without dashboards")
	}
}
