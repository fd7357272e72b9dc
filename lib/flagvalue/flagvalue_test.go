package flagvalue

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// Each value's error names its flag and the form it wants.
func TestValuesNameTheirFlag(t *testing.T) {
	var d time.Duration
	var s string
	var n int
	for _, c := range []struct {
		set  func(string) error
		in   string
		says string
	}{
		{(&Duration{Flag: "--refresh.interval", Dst: &d}).Set, "5", `--refresh.interval "5" has no unit; write a duration such as 5s or 5ms`},
		{(&Duration{Flag: "--refresh.interval", Dst: &d}).Set, "soon", `--refresh.interval "soon" is not a duration`},
		{(&Enum{Flag: "--log.level", Dst: &s, Options: []string{"info", "debug"}}).Set, "loud", "--log.level: enum value must be one of info,debug, got 'loud'"},
		{(&Count{Flag: "--events.capacity", Dst: &n, Min: 1, Max: 10}).Set, "1.5", `--events.capacity "1.5" is not a whole number; give one from 1 to 10`},
		{(&Count{Flag: "--events.capacity", Dst: &n, Min: 1, Max: 10}).Set, "99999999999999999999", "--events.capacity 99999999999999999999 is out of range"},
	} {
		if err := c.set(c.in); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%q: %v, want an error saying %q", c.in, err, c.says)
		}
	}
	if err := (&Duration{Flag: "--x", Dst: &d}).Set("1m"); err != nil || d != time.Minute {
		t.Errorf("1m: %v, %s", err, d)
	}
	if got := SplitList([]string{"a:1, b:1", "c:1", ""}); !slices.Equal(got, []string{"a:1", "b:1", "c:1"}) {
		t.Errorf("SplitList = %q", got)
	}
}
