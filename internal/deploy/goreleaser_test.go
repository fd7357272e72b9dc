package deploy

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/failover-exporter/failover_exporter/internal/lab"
)

// TestGoreleaserConfig checks what .goreleaser.yml promises; `goreleaser
// check` and a snapshot build are run by scripts/release-check.sh.
func TestGoreleaserConfig(t *testing.T) {
	root := lab.RepoRoot(t)
	docs := decodeYAML(t, filepath.Join(root, ".goreleaser.yml"))
	if len(docs) != 1 {
		t.Fatalf(".goreleaser.yml: %d documents, want 1", len(docs))
	}
	cfg := docs[0]
	if v, _ := cfg["version"].(int); v != 2 {
		t.Errorf("version: %v, want 2", cfg["version"])
	}

	builds := getList(cfg, "builds")
	if len(builds) != 1 {
		t.Fatalf("builds: %d, want 1", len(builds))
	}
	build := builds[0]
	if !slices.Contains(strings1(getList(build, "env")), "CGO_ENABLED=0") {
		t.Errorf("builds[0].env %v lacks CGO_ENABLED=0", getList(build, "env"))
	}
	if !slices.Contains(strings1(getList(build, "flags")), "-trimpath") {
		t.Errorf("builds[0].flags %v lacks -trimpath", getList(build, "flags"))
	}
	goos, goarch := strings1(getList(build, "goos")), strings1(getList(build, "goarch"))
	slices.Sort(goos)
	slices.Sort(goarch)
	if !slices.Equal(goos, []string{"darwin", "linux", "windows"}) || !slices.Equal(goarch, []string{"amd64", "arm64"}) {
		t.Errorf("targets goos %v goarch %v, want darwin/linux/windows x amd64/arm64", goos, goarch)
	}
	if ignore := getList(build, "ignore"); len(ignore) > 0 {
		t.Errorf("builds[0].ignore %v drops some of the 6 os/arch pairs", ignore)
	}
	ldflags := strings.Join(strings1(getList(build, "ldflags")), " ")
	for _, v := range []string{"Version", "Revision", "Branch", "BuildDate"} {
		re := regexp.MustCompile(`-X github\.com/prometheus/common/version\.` + v + `=\{\{ *\.\w+ *\}\}`)
		if !re.MatchString(ldflags) {
			t.Errorf("ldflags %q do not stamp version.%s from a template", ldflags, v)
		}
	}

	archives := getList(cfg, "archives")
	if len(archives) == 0 {
		t.Fatal("no archives")
	}
	files := strings1(getList(archives[0], "files"))
	for _, want := range []string{"README.md", "LICENSE", "grafana/dashboards/", "prometheus/alerts.yml", "examples/"} {
		if !slices.ContainsFunc(files, func(f string) bool { return strings.HasPrefix(f, want) }) {
			t.Errorf("archives[0].files %v lack %s", files, want)
		}
	}
	for _, f := range files {
		if f == "README.md" {
			continue // the lead's; not asserted to exist here
		}
		pattern := strings.ReplaceAll(f, "**/", "")
		if matches, _ := filepath.Glob(filepath.Join(root, pattern)); len(matches) == 0 {
			t.Errorf("archive file pattern %q matches nothing in the repository", f)
		}
	}
	if getString(cfg, "checksum", "name_template") == "" {
		t.Error("checksum.name_template not set")
	}

	dockers := getList(cfg, "dockers_v2")
	if len(dockers) != 1 {
		t.Fatalf("dockers_v2: %d images, want 1", len(dockers))
	}
	platforms := strings1(getList(dockers[0], "platforms"))
	for _, p := range []string{"linux/amd64", "linux/arm64"} {
		if !slices.Contains(platforms, p) {
			t.Errorf("dockers_v2[0].platforms %v lack %s", platforms, p)
		}
	}
	dockerfile := getString(dockers[0], "dockerfile")
	checkDockerfile(t, filepath.Join(root, dockerfile))
	checkDockerfile(t, filepath.Join(root, "Dockerfile"))
}

// checkDockerfile: the final stage is a small static base, runs as a
// non-root user and has the exporter as its entrypoint.
func checkDockerfile(t *testing.T, path string) {
	t.Helper()
	var from, user, entrypoint string
	for _, line := range strings.Split(string(readFile(t, path)), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		switch strings.ToUpper(fields[0]) {
		case "FROM":
			from, user, entrypoint = fields[1], "", ""
		case "USER":
			user = fields[1]
		case "ENTRYPOINT":
			entrypoint = strings.Join(fields[1:], " ")
		}
	}
	base := from
	if !strings.HasPrefix(base, "gcr.io/distroless/static") && base != "scratch" {
		t.Errorf("%s: final base %q is not distroless/static or scratch", path, base)
	}
	if !imagePinned(base) && base != "scratch" {
		t.Errorf("%s: base %q has no explicit tag", path, base)
	}
	uid := strings.SplitN(user, ":", 2)[0]
	if uid == "" || uid == "0" || uid == "root" {
		t.Errorf("%s: final stage USER %q, want a non-root user", path, user)
	}
	if !strings.Contains(entrypoint, "failover_exporter") {
		t.Errorf("%s: ENTRYPOINT %q does not run the exporter", path, entrypoint)
	}
}

func strings1(l []any) []string {
	out := make([]string, 0, len(l))
	for _, v := range l {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
