package redis

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/failover-exporter/failover_exporter/systems/redis/proto"
)

// The libraries connected to a demoted node (issue 46): when clients are
// seen routed to a node after its demotion, its stale_routing_started
// event names the client libraries that could be sending it the misrouted
// commands, from CLIENT LIST's lib-name and lib-ver (Redis 7.2+, Valkey
// 8+; clients set them with CLIENT SETINFO). CLIENT LIST is sent only to
// the demoted nodes the exporter watches, for as long as it watches them.
// Names reach the event text only, never a label: they are whatever a
// client sent, so they are checked and capped, and so is their number.

const (
	// maxClientLibraries is how many distinct libraries one reading
	// keeps; the connections of any more are counted as others.
	maxClientLibraries = 64
	// clientLibrariesNamed is how many the event names, most connections
	// first.
	clientLibrariesNamed = 5
	// maxClientLibraryText bounds a library's name and its version.
	maxClientLibraryText = 40
)

// ClientLibrary is a library connected to a node, with its connections.
type ClientLibrary struct {
	Name, Version string
	Connections   int
}

// ClientLibraries are the connections that may send a node misrouted
// commands: normal clients not in READONLY mode, active within the stale
// routing quiet window, the exporter's own left out.
type ClientLibraries struct {
	// Libraries by connections, most first; at most maxClientLibraries.
	Libraries []ClientLibrary
	// Others are the connections of libraries past maxClientLibraries.
	Others int
	// Unnamed are the connections that set no library name.
	Unnamed int
}

// clientListCommand lists a node's normal clients (no replica, no pub/sub).
func clientListCommand(client rueidis.Client) rueidis.Completed {
	return client.B().ClientList().TypeNormal().Build()
}

// parseClientList reads a CLIENT LIST reply into the libraries of the
// connections active within maxIdle. ok is false when the server names no
// client library (lib-name is Redis 7.2+ and Valkey 8+): the libraries are
// then unknown, not absent.
func parseClientList(text string, maxIdle time.Duration) (libs *ClientLibraries, ok bool, err error) {
	byLib := map[ClientLibrary]int{}
	libs = &ClientLibraries{}
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		fields := map[string]string{}
		for f := range strings.FieldsSeq(line) {
			k, v, _ := strings.Cut(f, "=")
			fields[k] = v
		}
		if _, named := fields["lib-name"]; named {
			ok = true
		}
		idle, perr := strconv.ParseInt(fields["idle"], 10, 64)
		if perr != nil {
			return nil, false, fmt.Errorf("CLIENT LIST: idle %q in %q", fields["idle"], line)
		}
		if strings.HasPrefix(fields["name"], redisproto.ClientName) || strings.Contains(fields["flags"], "r") || time.Duration(idle)*time.Second > maxIdle {
			continue
		}
		lib := ClientLibrary{Name: cleanClientText(fields["lib-name"]), Version: cleanClientText(fields["lib-ver"])}
		switch _, known := byLib[lib]; {
		case lib.Name == "":
			libs.Unnamed++
		case known || len(byLib) < maxClientLibraries:
			byLib[lib]++
		default:
			libs.Others++
		}
	}
	for lib, n := range byLib {
		lib.Connections = n
		libs.Libraries = append(libs.Libraries, lib)
	}
	slices.SortFunc(libs.Libraries, func(a, b ClientLibrary) int {
		return cmp.Or(b.Connections-a.Connections, cmp.Compare(a.Name, b.Name), cmp.Compare(a.Version, b.Version))
	})
	return libs, ok, nil
}

// cleanClientText is s with anything but printable ASCII replaced by '?'
// and cut to maxClientLibraryText bytes: a client chose it.
func cleanClientText(s string) string {
	if len(s) > maxClientLibraryText {
		s = s[:maxClientLibraryText]
	}
	return strings.Map(func(r rune) rune {
		if r < '!' || r > '~' || r == '"' || r == '\\' {
			return '?'
		}
		return r
	}, s)
}

// String names the most connected libraries, for an event's text.
func (l *ClientLibraries) String() string {
	var parts []string
	for i, lib := range l.Libraries {
		if i == clientLibrariesNamed {
			parts = append(parts, fmt.Sprintf("%d more libraries", len(l.Libraries)-i))
			break
		}
		name := lib.Name
		if lib.Version != "" {
			name += " " + lib.Version
		}
		parts = append(parts, fmt.Sprintf("%s (%d)", name, lib.Connections))
	}
	if l.Others > 0 {
		parts = append(parts, fmt.Sprintf("%d connections of other libraries", l.Others))
	}
	if l.Unnamed > 0 {
		parts = append(parts, fmt.Sprintf("%d connections naming no library", l.Unnamed))
	}
	if len(parts) == 0 {
		return "no client connected that could send them"
	}
	return "connected: " + strings.Join(parts, ", ")
}
