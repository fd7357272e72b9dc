package config

import (
	"net/url"
	"strings"
)

// RedactURL returns a URL without its user:password, query and fragment,
// the parts that may hold credentials, for messages and logs.
func RedactURL(raw string) string {
	if !strings.ContainsAny(raw, "@?#") {
		return raw
	}
	if u, err := url.Parse(raw); err == nil && u.Opaque == "" {
		redacted := *u
		redacted.User, redacted.RawQuery, redacted.ForceQuery, redacted.Fragment, redacted.RawFragment = nil, "", false, "", ""
		return redacted.String()
	}
	if i := strings.IndexAny(raw, "?#"); i >= 0 {
		raw = raw[:i]
	}
	if scheme, rest, ok := strings.Cut(raw, "://"); ok {
		if i := strings.LastIndex(rest, "@"); i >= 0 {
			rest = rest[i+1:]
		}
		return scheme + "://" + rest
	}
	if i := strings.LastIndex(raw, "@"); i >= 0 {
		raw = raw[i+1:]
	}
	return raw
}
