package model

import (
	"fmt"
	"strings"
	"time"
)

// Ago writes how long ago something happened, as the page shows it:
// "now", "3s ago", "2m05s ago", "1h02m ago". Every builder uses it, so
// that the whole page reads one way.
func Ago(d time.Duration) string {
	switch {
	case d < time.Second:
		return "now"
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds ago", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm ago", int(d.Hours()), int(d.Minutes())%60)
}

// Age writes how long something has lasted: "0s", "45s", "2m05s".
func Age(d time.Duration) string {
	if d < time.Second {
		return "0s"
	}
	return strings.TrimSuffix(Ago(d), " ago")
}
