package redis

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// clientLine is a Valkey 8 CLIENT LIST line (Redis 7.2+ has the same
// fields) with the fields parseClientList reads.
func clientLine(id int, name, flags string, idle int, lib, ver string) string {
	return fmt.Sprintf("id=%d addr=127.0.0.1:%d laddr=127.0.0.1:7000 fd=9 name=%s age=3 idle=%d flags=%s capa= db=0 sub=0 psub=0 ssub=0 multi=-1 watch=0 qbuf=0 qbuf-free=0 argv-mem=10 multi-mem=0 rbs=16392 rbp=16392 obl=0 oll=0 omem=0 tot-mem=16938 events=r cmd=set user=default redir=-1 resp=2 lib-name=%s lib-ver=%s tot-net-in=26 tot-net-out=0 tot-cmds=1\n",
		id, 40000+id, name, idle, flags, lib, ver)
}

// The connections that may send misrouted commands are counted by
// library: the exporter's own, READONLY-mode readers and connections idle
// past the quiet window are left out, unnamed ones counted apart.
func TestParseClientList(t *testing.T) {
	text := clientLine(1, "", "N", 0, "go-redis(go1.22)", "9.5.1") +
		clientLine(2, "", "N", 3, "go-redis(go1.22)", "9.5.1") +
		clientLine(3, "", "N", 0, "redis-py", "5.0.1") +
		clientLine(4, "", "N", 0, "", "") +
		clientLine(5, "failover_exporter", "N", 0, "", "") +
		clientLine(6, "failover_exporter_canary", "N", 0, "", "") +
		clientLine(7, "", "r", 0, "lettuce", "6.3") + // a reader in READONLY mode
		clientLine(8, "", "N", 61, "jedis", "5.1") // idle past the window
	libs, named, err := parseClientList(text, time.Minute)
	if err != nil || !named {
		t.Fatalf("parseClientList: %v, named %v", err, named)
	}
	want := "connected: go-redis(go1.22) 9.5.1 (2), redis-py 5.0.1 (1), 1 connections naming no library"
	if got := libs.String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

// Redis before 7.2 names no library: the libraries are unknown, not
// "none".
func TestParseClientListWithoutLibraries(t *testing.T) {
	text := "id=3 addr=127.0.0.1:53928 laddr=127.0.0.1:17998 fd=7 name= age=0 idle=0 flags=N db=0 sub=0 psub=0 ssub=0 multi=-1 qbuf=26 qbuf-free=20448 argv-mem=10 multi-mem=0 rbs=16384 rbp=16384 obl=0 oll=0 omem=0 tot-mem=37658 events=r cmd=client|list user=default redir=-1 resp=2\n"
	if _, named, err := parseClientList(text, time.Minute); err != nil || named {
		t.Errorf("parseClientList of Redis 7.0's CLIENT LIST: named %v, %v; want unnamed", named, err)
	}
	if _, _, err := parseClientList("id=3 idle=x flags=N\n", time.Minute); err == nil {
		t.Error("parseClientList accepted idle=x")
	}
}

// Names are what clients sent: bytes outside printable ASCII (a server
// that checked less, a future one) become '?', each name is cut, the
// libraries kept are capped, and the event names the first few.
func TestParseClientListCapsAndCleans(t *testing.T) {
	var b strings.Builder
	b.WriteString(clientLine(0, "", "N", 0, "evil\x1b[31m\"lib\"", strings.Repeat("9", 100)))
	for i := 1; i <= maxClientLibraries+10; i++ {
		b.WriteString(clientLine(i, "", "N", 0, fmt.Sprintf("lib%03d", i), "1"))
	}
	libs, _, err := parseClientList(b.String(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(libs.Libraries) != maxClientLibraries || libs.Others != 11 {
		t.Errorf("%d libraries and %d others, want %d and 11", len(libs.Libraries), libs.Others, maxClientLibraries)
	}
	for _, l := range libs.Libraries {
		if len(l.Name) > maxClientLibraryText || len(l.Version) > maxClientLibraryText || strings.ContainsAny(l.Name+l.Version, "\x1b\" ") {
			t.Errorf("library %q %q not cleaned", l.Name, l.Version)
		}
	}
	s := libs.String()
	if n := strings.Count(s, "("); n != clientLibrariesNamed || !strings.Contains(s, fmt.Sprintf("%d more libraries", maxClientLibraries-clientLibrariesNamed)) ||
		!strings.Contains(s, "11 connections of other libraries") {
		t.Errorf("String() = %q, want %d libraries named, the rest counted", s, clientLibrariesNamed)
	}
}
