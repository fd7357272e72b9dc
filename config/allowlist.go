package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// A module's allow-list says where its settings, and the credentials among
// them, may be taken: a /probe target is named by whoever reaches the
// exporter's port, and without a list a module would hand its password to
// any host that caller names.
//
//	allowed_targets:
//	  - 10.0.0.5:9092           an IP address
//	  - 10.1.0.0/16:9092-9094   a CIDR range, a port range
//	  - "[fd00::/8]:*"          IPv6 in brackets, the prefix inside them; any port
//	  - kafka-1.prod.internal:9092
//	  - "*.prod.internal:9092"  one or more labels in front of .prod.internal
//
// An IP target matches the IP and CIDR entries only, a name target the
// name and wildcard entries only: a name is not resolved to be matched
// against a range, as it may resolve anywhere tomorrow.

// ErrTargetNotAllowed is a /probe target with an address its module's
// allowed_targets does not list.
var ErrTargetNotAllowed = errors.New("target not allowed")

// TargetChecker is a module's cluster at a target (At): CheckTarget
// reports whether the module allows every one of its addresses. The
// manager builds no watcher of a discovered target whose settings do not
// pass it, and none of a system whose settings cannot say.
type TargetChecker interface {
	CheckTarget() error
}

// CheckAllowedTargets reports whether every one of addrs, a target's
// canonical addresses (ParseTarget), is in allowed, a module's validated
// allowed_targets; allowAny allows all.
func CheckAllowedTargets(allowed []string, allowAny bool, addrs []string) error {
	if allowAny {
		return nil
	}
	if len(addrs) == 0 {
		return fmt.Errorf("%w: the target has no address", ErrTargetNotAllowed)
	}
	entries := make([]allowEntry, 0, len(allowed))
	for _, s := range allowed {
		e, err := parseAllowEntry(s)
		if err != nil {
			return fmt.Errorf("%w: allowed_targets entry %q: %w", ErrTargetNotAllowed, s, err)
		}
		entries = append(entries, e)
	}
	for _, a := range addrs {
		if !allowedAddr(entries, a) {
			return fmt.Errorf("%w: address %q is not in the module's allowed_targets", ErrTargetNotAllowed, a)
		}
	}
	return nil
}

// allowedAddr reports whether an entry allows a, HOST:PORT.
func allowedAddr(entries []allowEntry, a string) bool {
	host, portText, err := net.SplitHostPort(a)
	if err != nil {
		return false
	}
	port, err := parsePort(portText)
	if err != nil {
		return false
	}
	ip, isIP, err := parseIPHost(host)
	if err != nil {
		return false
	}
	var name string
	if !isIP {
		if name, err = canonicalHostName(host); err != nil {
			return false
		}
	}
	for _, e := range entries {
		if port < e.minPort || port > e.maxPort {
			continue
		}
		switch {
		case isIP && e.prefix.IsValid():
			if e.prefix.Contains(ip) {
				return true
			}
		case isIP || e.prefix.IsValid():
			// An IP against a name, or a name against a range: never.
		case e.wildcard:
			if strings.HasSuffix(name, "."+e.name) {
				return true
			}
		case name == e.name:
			return true
		}
	}
	return false
}

// allowEntry is one entry of allowed_targets, read.
type allowEntry struct {
	// prefix is an IP or CIDR entry's range (an IP is a range of one).
	prefix netip.Prefix
	// name is a name entry's host name; with wildcard, the suffix that
	// one or more labels must come before.
	name     string
	wildcard bool
	// minPort and maxPort are the ports allowed, both included.
	minPort, maxPort uint16
}

// parseAllowEntry reads HOST:PORTS, or says what to write instead.
func parseAllowEntry(s string) (allowEntry, error) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return allowEntry{}, errors.New("want HOST:PORTS, as in 10.0.0.0/8:9092, broker-1.prod.internal:9092-9094 or *.prod.internal:*")
	}
	host, ports := s[:i], s[i+1:]
	var e allowEntry
	var err error
	if e.minPort, e.maxPort, err = parsePorts(ports); err != nil {
		return allowEntry{}, err
	}
	bracketed := strings.HasPrefix(host, "[")
	if bracketed {
		if !strings.HasSuffix(host, "]") {
			if j := strings.Index(host, "]/"); j >= 0 {
				return allowEntry{}, fmt.Errorf("an IPv6 range goes inside the brackets: write [%s%s]:%s", host[1:j], host[j+1:], ports)
			}
			return allowEntry{}, errors.New("an opening bracket without its closing one before :PORTS")
		}
		host = host[1 : len(host)-1]
		if !strings.Contains(host, ":") {
			return allowEntry{}, fmt.Errorf("brackets hold an IPv6 address or range, and %q is none", host)
		}
	} else if strings.Contains(host, ":") {
		return allowEntry{}, errors.New("an IPv6 address or range needs brackets, as in [fd00::1]:9092 or [fd00::/8]:9092")
	}
	switch {
	case strings.Contains(host, "/"):
		p, err := netip.ParsePrefix(host)
		switch {
		case err != nil:
			return allowEntry{}, fmt.Errorf("%q is not a CIDR range", host)
		case p.Addr().Is4In6():
			return allowEntry{}, fmt.Errorf("%q is an IPv4-mapped range: write it as the IPv4 range it is", host)
		case p != p.Masked():
			return allowEntry{}, fmt.Errorf("%q has bits set past its /%d: write %s", host, p.Bits(), p.Masked())
		}
		e.prefix = p
	case host == "*":
		return allowEntry{}, errors.New("a host of * would allow every host: list where the module's clusters are, or, for a module without credentials, write allow_any_target: true")
	case strings.Contains(strings.TrimPrefix(host, "*."), "*"):
		return allowEntry{}, fmt.Errorf("%q: a wildcard is *. in front of a name only, as in *.prod.internal", host)
	case strings.HasPrefix(host, "*."):
		if e.name, err = canonicalHostName(host[2:]); err != nil {
			return allowEntry{}, err
		}
		e.wildcard = true
	default:
		ip, isIP, err := parseIPHost(host)
		switch {
		case err != nil:
			return allowEntry{}, err
		case isIP:
			e.prefix = netip.PrefixFrom(ip, ip.BitLen())
		case bracketed:
			return allowEntry{}, fmt.Errorf("brackets hold an IPv6 address or range, and %q is none", host)
		default:
			if e.name, err = canonicalHostName(host); err != nil {
				return allowEntry{}, err
			}
		}
	}
	return e, nil
}

// parsePorts reads PORTS: a port, a range LOW-HIGH, or * for any.
func parsePorts(s string) (lowest, highest uint16, err error) {
	if s == "*" {
		return 1, 65535, nil
	}
	low, high, isRange := strings.Cut(s, "-")
	if !isRange {
		p, err := parsePort(s)
		return p, p, err
	}
	if lowest, err = parsePort(low); err != nil {
		return 0, 0, err
	}
	if highest, err = parsePort(high); err != nil {
		return 0, 0, err
	}
	if lowest > highest {
		return 0, 0, fmt.Errorf("port range %q runs backwards", s)
	}
	return lowest, highest, nil
}

// checkModuleTargets checks what a module says about where it may go:
// credentials names what secrets it carries ("sasl", "tls.cert_file"),
// none when it carries none.
func checkModuleTargets(allowed []string, allowAny bool, credentials []string, tls TLS) error {
	var errs []error
	for i, s := range allowed {
		if _, err := parseAllowEntry(s); err != nil {
			errs = append(errs, fmt.Errorf("allowed_targets[%d] %q: %w", i, s, err))
		}
	}
	carries := strings.Join(credentials, ", ")
	switch {
	case len(allowed) > 0 && allowAny:
		errs = append(errs, errors.New("allowed_targets and allow_any_target: true are both set: keep one"))
	case allowAny && carries != "":
		errs = append(errs, fmt.Errorf("allow_any_target: true is refused for a module that carries credentials (%s), which would go to any host a /probe request names: list where its clusters are instead, allowed_targets: [HOST:PORTS, ...]", carries))
	case len(allowed) == 0 && carries != "":
		errs = append(errs, fmt.Errorf("the module carries credentials (%s) and has no allowed_targets: add allowed_targets: [HOST:PORTS, ...] listing where its clusters are (10.0.0.0/8:9092, broker-1.prod.internal:9092, *.prod.internal:*), so that no /probe request can send them elsewhere", carries))
	case len(allowed) == 0 && !allowAny:
		errs = append(errs, errors.New("the module says nowhere where its targets may be: add allowed_targets: [HOST:PORTS, ...] listing them, or allow_any_target: true to let any /probe request choose the host (a module without credentials only)"))
	}
	if tls.ServerName != "" {
		errs = append(errs, errors.New("tls.server_name is refused in a module: each target's certificate is verified for the target's own host name, and one name would accept that name's certificate from any allowed host"))
	}
	if tls.InsecureSkipVerify && carries != "" {
		errs = append(errs, fmt.Errorf("tls.insecure_skip_verify: true is refused in a module that carries credentials (%s): they would go to whoever answers at an allowed address", carries))
	}
	return errors.Join(errs...)
}

// errModuleKeys refuses a module's keys in a cluster of the file.
func errModuleKeys(allowed []string, allowAny bool, modulesKey string) error {
	if len(allowed) == 0 && !allowAny {
		return nil
	}
	return fmt.Errorf("allowed_targets and allow_any_target are keys of a module (%s:): a cluster of the file has its addresses already", modulesKey)
}

// Credentials are a TLS client certificate's keys, when one is set.
func (t TLS) Credentials() []string {
	var keys []string
	if t.CertFile != "" {
		keys = append(keys, "tls.cert_file")
	}
	if t.KeyFile != "" {
		keys = append(keys, "tls.key_file")
	}
	return keys
}
