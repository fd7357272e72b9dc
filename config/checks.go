package config

import (
	"bytes"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits of the settings that have one. They are exported so that main can
// check flags with the same rule and name the flag in the message.
const (
	// MaxConfigSize bounds the config file: a real one is a few kilobytes,
	// and validating hundreds of megabytes would stall a start or reload.
	MaxConfigSize = 1 << 20
	// MinRefreshInterval and MaxRefreshInterval bound refresh_interval. A
	// failover exporter that reads its clusters less than hourly misses
	// every failover; the bound also keeps the derived refresh_timeout far
	// from overflowing.
	MinRefreshInterval = 100 * time.Millisecond
	MaxRefreshInterval = time.Hour
	// MaxEventCapacity bounds --events.capacity. The event log allocates
	// its whole ring at start (184 bytes an event before the strings it
	// holds): 100,000 events is about 18 MB up front and some 50 MB full,
	// while 200,000,000 made the start die out of memory after
	// --config.check had passed it. At the few events a failover makes,
	// 100,000 is weeks of history.
	MaxEventCapacity = 100_000
)

// CheckEventCapacity reports whether n events can be kept: at least one,
// at most MaxEventCapacity. given is how the user wrote the setting.
func CheckEventCapacity(given string, n int) error {
	switch {
	case n < 1:
		return fmt.Errorf("%s %d must be at least 1", given, n)
	case n > MaxEventCapacity:
		return fmt.Errorf("%s %d is more than %d, the most the event log keeps (each event is held in memory from the start)", given, n, MaxEventCapacity)
	}
	return nil
}

// CheckRefreshInterval reports whether d is a usable refresh interval.
// given is how the user wrote the setting (a flag or a key), for the
// message.
func CheckRefreshInterval(given string, d time.Duration) error {
	switch {
	case d <= 0:
		return fmt.Errorf("%s %s must be positive (at least %s)", given, d, MinRefreshInterval)
	case d < MinRefreshInterval:
		return fmt.Errorf("%s %s is shorter than %s", given, d, MinRefreshInterval)
	case d > MaxRefreshInterval:
		return fmt.Errorf("%s %s is longer than %s", given, d, MaxRefreshInterval)
	}
	return nil
}

// CheckAddr reports whether s is a HOST:PORT address that can be dialled,
// and if not, what to write instead. The message never repeats a password
// written into the address (redis://:PASSWORD@host:port).
func CheckAddr(s string) error {
	if strings.Contains(s, "://") {
		scheme, _, _ := strings.Cut(s, "://")
		return fmt.Errorf("%s: give HOST:PORT without a scheme (%s://)", RedactAddr(s), scheme)
	}
	if strings.Contains(s, "@") {
		return fmt.Errorf("%s: give HOST:PORT without credentials; passwords go in the config file as password: {file: PATH} or {env: VARIABLE}", RedactAddr(s))
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		if strings.Count(s, ":") > 1 && !strings.HasPrefix(s, "[") {
			return fmt.Errorf("%q: an IPv6 address needs brackets, as in [::1]:9092", s)
		}
		return fmt.Errorf("%q: want HOST:PORT", s)
	}
	if host == "" {
		return fmt.Errorf("%q: the host is empty; want HOST:PORT", s)
	}
	// Digits and dots are meant as an IPv4 address; as a name they would
	// fail every refresh with "no such host".
	if strings.Trim(host, "0123456789.") == "" && net.ParseIP(host) == nil {
		return fmt.Errorf("%q: %q is not an IP address", s, host)
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		return fmt.Errorf("%q: port is not a number", s)
	}
	if n < 1 || n > 65535 {
		return fmt.Errorf("%q: port %d is outside 1-65535", s, n)
	}
	return nil
}

// RedactAddr returns s with any credentials before an "@" replaced, for
// messages.
func RedactAddr(s string) string {
	if u, err := url.Parse(s); err == nil && u.User != nil {
		u.User = url.User("REDACTED")
		return strconv.Quote(u.String())
	}
	if i := strings.LastIndex(s, "@"); i >= 0 {
		return strconv.Quote("REDACTED" + s[i:])
	}
	return strconv.Quote(s)
}

// checkName refuses cluster names that cannot be a label value: Prometheus
// rejects a whole scrape with one invalid UTF-8 label value.
func checkName(name string) error {
	if !utf8.ValidString(name) {
		return fmt.Errorf("name %q is not valid UTF-8 and cannot be a label value", name)
	}
	return nil
}

// checkUTF8 names the first line that is not UTF-8 text, which the YAML
// parser reports only as an "invalid octet".
func checkUTF8(b []byte) error {
	if utf8.Valid(b) {
		return nil
	}
	for i, line := range bytes.Split(b, []byte("\n")) {
		if !utf8.Valid(line) {
			return fmt.Errorf("line %d is not valid UTF-8; names and other values must be UTF-8 text", i+1)
		}
	}
	return nil
}
