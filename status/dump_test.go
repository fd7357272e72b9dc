package status

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dumpPage writes a rendered page to $STATUS_PAGE_DUMP/<test>.html when
// that is set, so that the renders of the fixtures before and after a
// change of the view model can be compared byte for byte.
func dumpPage(t *testing.T, body string) {
	dir := os.Getenv("STATUS_PAGE_DUMP")
	if dir == "" {
		return
	}
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	for i := 0; ; i++ {
		path := filepath.Join(dir, name+"."+string(rune('a'+i))+".html")
		if _, err := os.Stat(path); err == nil {
			continue
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
}
