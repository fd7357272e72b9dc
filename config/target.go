package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A /probe target comes from whoever reaches the exporter's port, and its
// canonical form becomes a label value (kafka_cluster, redis_cluster) and
// the key of a running target. So it is read as strictly as a cluster's
// name is checked: printable ASCII, each address an IP literal or an RFC
// 1123 host name and a port, and written one way only, so that two
// spellings of one cluster are one target.

// MaxTargetAddrs is the most addresses one target may list: a cluster's
// seeds, not an inventory.
const MaxTargetAddrs = 16

// ParseTarget reads a /probe target: one address or several, comma
// separated, each HOST:PORT. It returns the addresses canonical (host
// names lowercased without a trailing dot, IPv4-mapped IPv6 addresses
// unmapped, IPv6 in brackets), without duplicates, sorted: the target's
// name is strings.Join(addrs, ","). An error names the bad part quoted
// (%q), so that no invalid byte reaches a log or a page raw.
func ParseTarget(target string) ([]string, error) {
	// Quoted, and without what a careless user:password@ put before it.
	quoted := RedactAddr(target)
	if !utf8.ValidString(target) {
		return nil, fmt.Errorf("target %s is not valid UTF-8", quoted)
	}
	if i := strings.IndexFunc(target, func(r rune) bool { return r < 0x20 || r > 0x7e }); i >= 0 {
		r, _ := utf8.DecodeRuneInString(target[i:])
		return nil, fmt.Errorf("target %s: %q is not printable ASCII", quoted, r)
	}
	if strings.TrimSpace(target) == "" {
		return nil, errors.New("target is empty")
	}
	if n := strings.Count(target, ",") + 1; n > MaxTargetAddrs {
		return nil, fmt.Errorf("target lists %d addresses, more than %d", n, MaxTargetAddrs)
	}
	var addrs []string
	for _, a := range strings.Split(target, ",") {
		canonical, err := CanonicalAddr(strings.TrimSpace(a))
		if err != nil {
			return nil, fmt.Errorf("target %s: %w", quoted, err)
		}
		addrs = append(addrs, canonical)
	}
	slices.Sort(addrs)
	return slices.Compact(addrs), nil
}

// CanonicalAddr is a's one spelling, or why a is not HOST:PORT: the form
// a /probe target's addresses take, against which the manager compares
// the addresses clusters report of their members.
func CanonicalAddr(a string) (string, error) {
	switch {
	case a == "":
		return "", errors.New("an address is empty")
	case strings.Contains(a, "@"):
		return "", fmt.Errorf("address %s: give HOST:PORT without credentials", RedactAddr(a))
	case strings.Contains(a, "://"):
		return "", fmt.Errorf("address %q: give HOST:PORT without a scheme", a)
	}
	host, portText, err := net.SplitHostPort(a)
	if err != nil {
		if strings.Count(a, ":") > 1 && !strings.HasPrefix(a, "[") {
			return "", fmt.Errorf("address %q: an IPv6 address needs brackets, as in [::1]:9092", a)
		}
		return "", fmt.Errorf("address %q: want HOST:PORT", a)
	}
	port, err := parsePort(portText)
	if err != nil {
		return "", fmt.Errorf("address %q: %w", a, err)
	}
	if ip, ok, err := parseIPHost(host); err != nil {
		return "", fmt.Errorf("address %q: %w", a, err)
	} else if ok {
		return netip.AddrPortFrom(ip, port).String(), nil
	}
	if strings.HasPrefix(a, "[") {
		return "", fmt.Errorf("address %q: brackets hold an IPv6 address, and %q is none", a, host)
	}
	name, err := canonicalHostName(host)
	if err != nil {
		return "", fmt.Errorf("address %q: %w", a, err)
	}
	return name + ":" + strconv.Itoa(int(port)), nil
}

// parseIPHost reads host as an IP literal: ok false when it is not one.
// Zones are refused (fe80::1%eth0 names an interface of the exporter's
// host, not a cluster); IPv4-mapped IPv6 addresses are unmapped, so that
// an allow-list of IPv4 ranges sees them as the IPv4 addresses they are.
func parseIPHost(host string) (ip netip.Addr, ok bool, err error) {
	ip, err = netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, false, nil
	}
	if ip.Zone() != "" {
		return netip.Addr{}, false, fmt.Errorf("%q has an IPv6 zone, which is refused", host)
	}
	return ip.Unmap(), true, nil
}

// Bounds of a host name (RFC 1123).
const (
	maxHostNameLen  = 253
	maxHostLabelLen = 63
)

// canonicalHostName is host as an RFC 1123 host name, lowercased and
// without its trailing dot, or why it is none.
func canonicalHostName(host string) (string, error) {
	name := strings.ToLower(strings.TrimSuffix(host, "."))
	switch {
	case name == "":
		return "", errors.New("the host is empty")
	case len(name) > maxHostNameLen:
		return "", fmt.Errorf("host %q is longer than %d characters", host, maxHostNameLen)
	// Digits and dots are meant as an IPv4 address; as a name they would
	// fail every refresh with "no such host".
	case strings.Trim(name, "0123456789.") == "":
		return "", fmt.Errorf("host %q is not an IP address", host)
	}
	for _, label := range strings.Split(name, ".") {
		switch {
		case label == "":
			return "", fmt.Errorf("host %q has an empty label", host)
		case len(label) > maxHostLabelLen:
			return "", fmt.Errorf("host %q has a label longer than %d characters", host, maxHostLabelLen)
		case label[0] == '-' || label[len(label)-1] == '-':
			return "", fmt.Errorf("host %q has a label that starts or ends with a hyphen", host)
		}
		if i := strings.IndexFunc(label, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') }); i >= 0 {
			return "", fmt.Errorf("host %q: %q is not a letter, digit or hyphen", host, label[i:i+1])
		}
	}
	return name, nil
}

// parsePort reads a port: decimal, 1-65535, no sign, no leading zero.
func parsePort(s string) (uint16, error) {
	if s == "" || len(s) > 5 || s[0] == '0' || strings.Trim(s, "0123456789") != "" {
		return 0, fmt.Errorf("port %q is not a number from 1 to 65535", s)
	}
	n, err := strconv.Atoi(s)
	if err != nil || n > 65535 {
		return 0, fmt.Errorf("port %q is not a number from 1 to 65535", s)
	}
	return uint16(n), nil
}
