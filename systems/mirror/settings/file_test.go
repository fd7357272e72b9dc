package settings

// The whole file's tests: a file of every section (kafka, redis and
// mirrors, and the modules sections), as the exporter reads it. They live
// here, with the section that names another's clusters, and import the
// redis settings so that its section is registered too.

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/failover-exporter/failover_exporter/config"
	"github.com/failover-exporter/failover_exporter/lib/readfile"
	kafkasettings "github.com/failover-exporter/failover_exporter/systems/kafka/settings"
	redissettings "github.com/failover-exporter/failover_exporter/systems/redis/settings"
)

// parseAndLoad runs a config through both ways in: Parse, and Load of a
// file (what a start, --config.check and a reload read).
func parseAndLoad(t *testing.T, body string) (*config.Config, []error) {
	t.Helper()
	cfg, parseErr := config.Parse([]byte(body))
	path := filepath.Join(t.TempDir(), "config.yml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	_, loadErr := config.Load(path)
	return cfg, []error{parseErr, loadErr}
}

// refusedCase is a config a user wrote and what the refusal must say:
// every string of want, none of notWant (secrets, settings not given).
type refusedCase struct {
	name, yaml string
	want       []string
	notWant    []string
}

func checkRefused(t *testing.T, cases []refusedCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, errs := parseAndLoad(t, c.yaml)
			for i, err := range errs {
				way := []string{"Parse", "Load"}[i]
				if err == nil {
					t.Fatalf("%s accepted:\n%s", way, c.yaml)
				}
				for _, w := range c.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("%s: error %q, want %q", way, err, w)
					}
				}
				for _, nw := range c.notWant {
					if strings.Contains(err.Error(), nw) {
						t.Errorf("%s: error %q shows %q", way, err, nw)
					}
				}
			}
		})
	}
}

const redisAt = "redis:\n  - addrs: [127.0.0.1:6379]\n"

// TestSecretMappingsAreStrict: issue 33 item 3. Each of these passed the
// check, a start and a reload, and Redis was then read with no password.
func TestSecretMappingsAreStrict(t *testing.T) {
	sasl := func(password string) string {
		return "kafka:\n  - bootstrap_servers: [127.0.0.1:9092]\n    sasl: {mechanism: PLAIN, username: u, password: " + password + "}\n"
	}
	checkRefused(t, []refusedCase{
		{"typo in file", redisAt + "    password: {flie: /etc/pw}\n", []string{`line 3: redis[0].password: unknown key "flie"; a secret takes only file or env`}, nil},
		{"capitalised key", redisAt + "    password: {File: /etc/pw}\n", []string{`redis[0].password: unknown key "File"`}, nil},
		{"value key", redisAt + "    password: {value: hunter2}\n", []string{`redis[0].password: unknown key "value"`}, []string{"hunter2"}},
		{"empty mapping", redisAt + "    password: {}\n", []string{"redis[0].password: names no file and no variable; write {file: PATH} or {env: VARIABLE}"}, nil},
		{"empty file", redisAt + "    password: {file: \"\"}\n", []string{"redis[0].password.file: is empty; give the path of the file holding the secret"}, nil},
		{"empty env", redisAt + "    password: {env: ~}\n", []string{"redis[0].password.env: is empty; give the name of the environment variable"}, nil},
		{"file and an inline password", redisAt + "    password: {file: /etc/pw, password: hunter2}\n", []string{`redis[0].password: unknown key "password"`}, []string{"hunter2"}},
		{"a key that may be the secret", redisAt + "    password: {hunter2}\n", []string{"redis[0].password: a key other than file or env (not shown"}, []string{"hunter2"}},
		{"both sources", redisAt + "    password: {file: /etc/pw, env: PW}\n", []string{"redis[0].password: give file or env, not both"}, nil},
		{"key without value", redisAt + "    password:\n", []string{"redis[0].password: is empty; write {file: PATH} or {env: VARIABLE}, or leave the key out"}, nil},
		{"inline", redisAt + "    password: hunter2\n", []string{"redis[0].password: secrets are not accepted inline"}, []string{"hunter2"}},
		{"a list", redisAt + "    password: [hunter2]\n", []string{"redis[0].password: a list is not a secret"}, []string{"hunter2"}},
		{"sasl typo", sasl("{flie: /etc/pw}"), []string{`kafka[0].sasl.password: unknown key "flie"`}, nil},
		{"connect typo", twoClusters + "mirrors:\n  - {name: m, source: eu, target: us, connect: {url: 'http://c:8083', username: u, password: {fiel: /x}}}\n",
			[]string{`mirrors[0].connect.password: unknown key "fiel"`}, nil},
	})
}

// TestNestedDurations: issue 33 item 5 and issue 29. A nested duration
// gets the same message as a top-level one, with its full key path, and
// an explicit 0s is refused by name (or, for wait, means what it says).
func TestNestedDurations(t *testing.T) {
	canary := func(lines string) string { return redisAt + "    canary:\n      enabled: true\n" + lines }
	checkRefused(t, []refusedCase{
		{"canary interval 0s", canary("      interval: 0s\n"), []string{"line 5: redis[0].canary.interval: 0s must be positive; leave the key out for the default"}, nil},
		{"canary key_ttl 0s", canary("      key_ttl: 0s\n"), []string{"line 5: redis[0].canary.key_ttl: 0s must be positive; leave the key out for the default"}, nil},
		{"canary interval without unit", canary("      interval: 5\n"), []string{"line 5: redis[0].canary.interval: 5 is not a duration; write it with a unit, such as 5s"}, []string{"!!int", "time.Duration"}},
		{"canary key_ttl without unit", canary("      key_ttl: 3600\n"), []string{"redis[0].canary.key_ttl: 3600 is not a duration; write it with a unit, such as 3600s"}, []string{"!!int"}},
		{"canary wait without unit", canary("      wait: 5\n"), []string{"redis[0].canary.wait: 5 is not a duration; write it with a unit, such as 5s"}, []string{"!!int"}},
		{"kafka canary interval 0s", "kafka:\n  - bootstrap_servers: [a:1]\n    canary: {interval: 0s}\n", []string{"kafka[0].canary.interval: 0s must be positive"}, nil},
		{"second cluster", redisAt + "  - name: b\n    addrs: [b:1]\n    canary: {key_ttl: 1.5}\n", []string{"line 5: redis[1].canary.key_ttl: 1.5 is not a duration; write it with a unit, such as 1.5s"}, nil},
		{"duration as a list", canary("      interval: [5s]\n"), []string{"redis[0].canary.interval: a list is not a duration"}, nil},
		{"mirror timeout 0s", twoClusters + "mirrors:\n  - {name: m, source: eu, target: us, refresh_timeout: 0s}\n", []string{"mirrors[0].refresh_timeout: 0s must be positive"}, nil},
		{"three at once, three messages", canary("      interval: 5\n      key_ttl: 0s\n      wait: -1s\n"),
			[]string{"redis[0].canary.interval: 5 is not", "redis[0].canary.key_ttl: 0s must be positive", "redis[0].canary.wait: -1s is negative"}, nil},
	})
	// Issue 42 item 10: a key_ttl a failover outlasts is refused by name; the
	// bound grows with the interval (10 intervals plus refresh_timeout).
	checkRefused(t, []refusedCase{
		{"canary key_ttl 1s", canary("      key_ttl: 1s\n"), []string{`redis cluster 1 ("redis"): canary.key_ttl 1s is shorter than 1m0s, which a failover needs`}, nil},
		{"canary key_ttl under 10 intervals", canary("      interval: 30s\n      key_ttl: 5m\n"), []string{"canary.key_ttl 5m0s is shorter than 5m4s"}, nil},
	})
	for _, ttl := range []string{"1m", "1h"} {
		if _, err := config.Parse([]byte(canary("      key_ttl: " + ttl + "\n"))); err != nil {
			t.Errorf("key_ttl %s refused: %v", ttl, err)
		}
	}
	// wait: 0s means no WAIT, as docs/configuration.md says; it is kept, not replaced.
	cfg, err := config.Parse([]byte(canary("      wait: 0s\n")))
	if err != nil || redissettings.Clusters(cfg)[0].Canary.Wait != 0 {
		t.Errorf("wait: 0s: %v", err)
	}
	// A merged block's value is checked, unless the mapping that merges
	// it sets the key itself, as the decoder takes that one.
	_, err = config.Parse([]byte("redis:\n  - &r {addrs: [a:1], canary: {interval: 5}}\n  - {<<: *r, name: b}\n"))
	if err == nil || !strings.Contains(err.Error(), "redis[1].canary.interval: 5 is not a duration") {
		t.Errorf("merged canary: %v", err)
	}
	if _, err := config.Parse([]byte("x: &c {dial_timeout: 5}\nredis:\n  - {<<: *c, dial_timeout: 5s, addrs: [a:1]}\n")); err != nil && strings.Contains(err.Error(), "dial_timeout") {
		t.Errorf("a merged value the mapping overrides: %v", err)
	}
	// An anchored block is checked where it is used.
	_, err = config.Parse([]byte("x-canary: &c {interval: 5}\n" + redisAt + "    canary: *c\n"))
	if err == nil || !strings.Contains(err.Error(), "redis[0].canary.interval: 5 is not a duration") {
		t.Errorf("aliased canary: %v", err)
	}
}

// The types the duration walk below stops at, and how it reads a struct's
// keys, as config's type walk does.
var (
	durationType    = reflect.TypeOf(time.Duration(0))
	secretType      = reflect.TypeOf(config.Secret{})
	regexpType      = reflect.TypeOf(config.Regexp{})
	unmarshalerType = reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()
)

// yamlFields maps a struct's yaml keys to its fields.
func yamlFields(t reflect.Type) map[string]reflect.StructField {
	fields := map[string]reflect.StructField{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		fields[name] = f
	}
	return fields
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// TestEveryDurationKeyGetsItsPath builds, for every time.Duration field
// reachable from the file's type (config.FileType) through structs,
// lists and pointers, a file that sets it to 5, and wants the message to name its
// path: a duration added later is covered without a line here.
func TestEveryDurationKeyGetsItsPath(t *testing.T) {
	type setting struct{ path, flow string }
	var settings []setting
	var visit func(t reflect.Type, path string, flow func(string) string)
	visit = func(t reflect.Type, path string, flow func(string) string) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || t == secretType || t == regexpType || reflect.PointerTo(t).Implements(unmarshalerType) {
			return
		}
		for key, f := range yamlFields(t) {
			p := join(path, key)
			inner := func(v string) string { return flow("{" + key + ": " + v + "}") }
			ft := f.Type
			if ft.Kind() == reflect.Slice {
				p += "[0]"
				inner = func(v string) string { return flow("{" + key + ": [" + v + "]}") }
				ft = ft.Elem()
			}
			if ft == durationType {
				settings = append(settings, setting{p, inner("5")})
				continue
			}
			visit(ft, p, inner)
		}
	}
	visit(config.FileType(), "", func(v string) string { return v })
	if len(settings) < 19 {
		t.Fatalf("found only %d duration settings: %v", len(settings), settings)
	}
	for _, s := range settings {
		_, err := config.Parse([]byte(s.flow))
		if want := s.path + ": 5 is not a duration; write it with a unit, such as 5s"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", s.flow, err, want)
		}
	}
}

// TestFilesTheConfigNamesAreBounded: issue 33 item 8. A ca_file or a
// secret file of /dev/zero made the check hang while memory grew; now
// each is refused by its key, at once.
func TestFilesTheConfigNamesAreBounded(t *testing.T) {
	dir := t.TempDir()
	huge := filepath.Join(dir, "huge")
	if err := os.WriteFile(huge, make([]byte, readfile.SecretLimit+1), 0o600); err != nil {
		t.Fatal(err)
	}
	hugePEM := filepath.Join(dir, "huge.pem")
	if err := os.WriteFile(hugePEM, make([]byte, readfile.PEMLimit+1), 0o600); err != nil {
		t.Fatal(err)
	}
	tlsWith := func(lines string) string { return redisAt + "    tls: {enabled: true, " + lines + "}\n" }
	start := time.Now()
	checkRefused(t, []refusedCase{
		{"ca_file /dev/zero", tlsWith("ca_file: /dev/zero"), []string{"tls.ca_file: /dev/zero is not a regular file"}, nil},
		{"cert_file /dev/zero", tlsWith("cert_file: /dev/zero, key_file: /dev/zero"), []string{"tls.cert_file: /dev/zero is not a regular file"}, nil},
		{"key_file /dev/zero", tlsWith("cert_file: " + hugePEM + ", key_file: /dev/zero"), []string{"tls.cert_file: " + hugePEM + " is larger than 4 MiB"}, nil},
		{"ca_file huge", tlsWith("ca_file: " + hugePEM), []string{"tls.ca_file: " + hugePEM + " is larger than 4 MiB"}, nil},
		{"ca_file a directory", tlsWith("ca_file: " + dir), []string{"tls.ca_file: " + dir + " is not a regular file"}, nil},
		{"password /dev/zero", redisAt + "    password: {file: /dev/zero}\n", []string{"password: secret file: /dev/zero is not a regular file"}, nil},
		{"password huge", redisAt + "    password: {file: " + huge + "}\n", []string{"password: secret file: " + huge + " is larger than 64 KiB"}, nil},
		{"sasl password /dev/zero", "kafka:\n  - bootstrap_servers: [a:1]\n    sasl: {mechanism: PLAIN, username: u, password: {file: /dev/zero}}\n", []string{"sasl.password: secret file: /dev/zero is not a regular file"}, nil},
		{"connect password /dev/zero", twoClusters + "mirrors:\n  - {name: m, source: eu, target: us, connect: {url: 'http://c:8083', username: u, password: {file: /dev/zero}}}\n",
			[]string{"connect.password: secret file: /dev/zero is not a regular file"}, nil},
		{"connect ca_file /dev/zero", twoClusters + "mirrors:\n  - {name: m, source: eu, target: us, connect: {url: 'https://c:8083', tls: {enabled: true, ca_file: /dev/zero}}}\n",
			[]string{"connect.tls: tls.ca_file: /dev/zero is not a regular file"}, nil},
	})
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("refusing the files took %s", took)
	}
	// The fingerprint reads the same files; it must not hang on them.
	fp, err := (redissettings.Cluster{TLS: config.TLS{Enabled: true, CAFile: "/dev/zero"}, Password: config.Secret{File: "/dev/zero"}}).Fingerprint()
	if err != nil || fp == "" {
		t.Errorf("fingerprint of /dev/zero files: %q, %v", fp, err)
	}
}

// TestConnectURLs: issue 33 items 10 and 12. A query or fragment was
// mangled into every request and its token logged; a URL without a
// scheme got "first path segment in URL cannot contain colon".
func TestConnectURLs(t *testing.T) {
	connect := func(url string) string {
		return twoClusters + "mirrors:\n  - name: m\n    source: eu\n    target: us\n    connect: {url: '" + url + "'}\n"
	}
	checkRefused(t, []refusedCase{
		{"query and fragment", connect("http://h:8083/?token=s3cret#fr4g"), []string{`connect.url "http://h:8083/" must not have a query (?...)`}, []string{"s3cret", "fr4g"}},
		{"query alone", connect("http://h:8083?token=s3cret"), []string{"must not have a query"}, []string{"s3cret"}},
		{"empty query", connect("http://h:8083/?"), []string{"must not have a query"}, nil},
		{"fragment", connect("http://h:8083/#s3cret"), []string{`connect.url "http://h:8083/" must not have a fragment`}, []string{"s3cret"}},
		{"user and password", connect("http://u:s3cret@h:8083"), []string{"connect.url must not hold credentials: use connect.username and connect.password"}, []string{"s3cret"}},
		{"no scheme", connect("127.0.0.1:8083"), []string{`connect.url "127.0.0.1:8083" has no scheme: write http:// or https:// before the host`}, []string{"first path segment"}},
		{"host only", connect("connect"), []string{"has no scheme: write http:// or https://"}, nil},
		{"other scheme", connect("ftp://h:21"), []string{`connect.url "ftp://h:21": the scheme must be http or https`}, nil},
		{"no host", connect("http://:8083"), []string{`connect.url "http://:8083" has no host`}, nil},
		{"port out of range", connect("http://h:99999"), []string{`connect.url "http://h:99999": port 99999 is outside 1-65535`}, nil},
		{"not a URL", connect("http://h:80%zz"), []string{`connect.url "http://h:80%zz" is not a URL`}, nil},
	})
	for _, ok := range []string{"http://connect:8083", "https://connect.example:8083/", "http://10.0.0.1:8083/connect-api", "http://[::1]:8083"} {
		if _, err := config.Parse([]byte(connect(ok))); err != nil {
			t.Errorf("%s refused: %v", ok, err)
		}
	}
}

// TestTypeHintsByKeyPath: issue 33 item 12. Each value of the wrong type
// is refused with its key path and what the key takes, not yaml's "cannot
// unmarshal !!str into bool".
func TestTypeHintsByKeyPath(t *testing.T) {
	checkRefused(t, []refusedCase{
		{"mirror partition_metrics mode", twoClusters + "mirrors:\n  - {name: m, source: eu, target: us, partition_metrics: full}\n",
			[]string{`mirrors[0].partition_metrics: "full" is not true or false; a mirror's partition_metrics is true (per-partition series too) or false`}, []string{"!!str"}},
		{"scalar bootstrap_servers", "kafka:\n  - bootstrap_servers: 127.0.0.1:9092\n",
			[]string{`line 2: kafka[0].bootstrap_servers: "127.0.0.1:9092" is not a list; write it as a list, such as [host:9092]`}, []string{"[]string"}},
		{"scalar addrs", "redis:\n  - addrs: 127.0.0.1:6379\n", []string{`redis[0].addrs: "127.0.0.1:6379" is not a list; write it as a list, such as [host:6379]`}, nil},
		{"canary enabled yes please", redisAt + "    canary: {enabled: please}\n", []string{`redis[0].canary.enabled: "please" is not true or false; write true or false`}, nil},
		{"replication factor a word", "kafka:\n  - bootstrap_servers: [a:1]\n    canary: {replication_factor: three}\n", []string{`kafka[0].canary.replication_factor: "three" is not a whole number`}, nil},
		{"name a list", "kafka:\n  - name: [a]\n    bootstrap_servers: [a:1]\n", []string{"kafka[0].name: a list is not a single value"}, nil},
		{"cluster a scalar", "kafka:\n  - orders\n", []string{`kafka[0]: "orders" is not a mapping of keys`}, nil},
		{"kafka a mapping", "kafka: {bootstrap_servers: [a:1]}\n", []string{"kafka: a mapping is not a list; write it as a list, such as [a, b]"}, nil},
		{"file a list", "- kafka\n", []string{"line 1: the file must be a mapping of kafka, redis, mirrors, kafka_modules and redis_modules lists"}, nil},
		{"empty include", "kafka:\n  - bootstrap_servers: [a:1]\n    topics: {include: \"\"}\n", []string{`kafka[0].topics.include: "" matches no topic, so nothing would be watched; leave the key out for every topic`}, nil},
		{"empty exclude", "kafka:\n  - bootstrap_servers: [a:1]\n    topics: {exclude: \"\"}\n", []string{`kafka[0].topics.exclude: "" matches no topic, so it excludes nothing`}, nil},
		{"empty mirror topics", twoClusters + "mirrors:\n  - {name: m, source: eu, target: us, topics: ''}\n", []string{`mirrors[0].topics: "" matches no topic`}, nil},
		{"bad include", "kafka:\n  - bootstrap_servers: [a:1]\n    topics: {include: \"(\"}\n", []string{`kafka[0].topics.include: invalid regular expression "("`}, nil},
		{"a second document", "kafka: []\n---\nredis: []\n", []string{"more than one YAML document; put all clusters in one"}, nil},
		{"a second document after an empty one", "kafka: []\n---\n---\nredis: []\n", []string{"more than one YAML document"}, nil},
	})
	// A file ending in --- (some generators write one) has one config.
	for _, body := range []string{redisAt + "---\n", redisAt + "---\n---\n", redisAt + "--- ~\n", redisAt + "---\n# the end\n", "---\n" + redisAt} {
		cfg, errs := parseAndLoad(t, body)
		if errs[0] != nil || errs[1] != nil || len(redissettings.Clusters(cfg)) != 1 {
			t.Errorf("%q: %v", body, errs)
		}
	}
}

// TestAliasBombIsRefusedQuickly: nested aliases that expand to billions
// of values are refused in a moment, not walked.
func TestAliasBombIsRefusedQuickly(t *testing.T) {
	var b strings.Builder
	b.WriteString("kafka:\n  - &a0 {bootstrap_servers: [a:1]}\n")
	for i := 1; i < 10; i++ {
		fmt.Fprintf(&b, "  - &a%d {<<: [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d], name: k%d}\n", i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i)
	}
	start := time.Now()
	_, err := config.Parse([]byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "aliases expand to more than") {
		t.Errorf("error: %.300v", err)
	}
	// Refused, it takes about a second on a busy 2-core machine; walked,
	// the billions of values would take hours. The bound is wide because a
	// niced go test beside two CPU-bound processes once took 11 s.
	if took := time.Since(start); took > time.Minute {
		t.Errorf("took %s", took)
	}
}

// TestManyMirrorsOfUnknownClustersStayLinear: each such mirror's message
// lists a few known clusters, not all of them, computed once.
func TestManyMirrorsOfUnknownClustersStayLinear(t *testing.T) {
	var b strings.Builder
	b.WriteString("kafka:\n")
	for i := range 2000 {
		fmt.Fprintf(&b, "  - {name: k%d, bootstrap_servers: [a:1]}\n", i)
	}
	b.WriteString("mirrors:\n")
	for i := range 2000 {
		fmt.Fprintf(&b, "  - {name: m%d, source: k0, target: nowhere}\n", i)
	}
	_, err := config.Parse([]byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), `target "nowhere" is not a cluster of the kafka list (known: "k0", "k1", "k10", `) ||
		!strings.Contains(err.Error(), "and 1990 more)") {
		t.Fatalf("error: %.300v", err)
	}
	if len(err.Error()) > 2000*200 {
		t.Errorf("the error is %d bytes for 2000 mirrors", len(err.Error()))
	}
}

// FuzzConnectURL: the check never panics, what it accepts has nothing a
// credential hides in, and the form messages show never has a query or
// fragment.
func FuzzConnectURL(f *testing.F) {
	for _, s := range []string{"http://h:8083", "http://h:8083/?token=x#frag", "127.0.0.1:8083", "http://u:p@h", "u:p@h:80%zz?t=x", "https://[::1]:8083/api", "http://h:0", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if shown := config.RedactURL(raw); strings.ContainsAny(shown, "?#") {
			t.Errorf("RedactURL(%q) = %q keeps a query or fragment", raw, shown)
		}
		u, err := checkConnectURL(raw)
		if err != nil {
			return
		}
		if u.User != nil || u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(raw, "?#") || u.Hostname() == "" {
			t.Errorf("accepted %q: %#v", raw, u)
		}
	})
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("kafka:\n  - bootstrap_servers: [127.0.0.1:9092]\n"))
	f.Add([]byte("redis:\n  - addrs: [127.0.0.1:7000]\n    password: {env: X}\n"))
	f.Add([]byte("kafka: [{bootstrap_servers: [a:1], topics: {include: 'a|b'}}]"))
	f.Add([]byte("redis:\n  - addrs: [a:1]\n    password: {flie: /x}\n    canary: {interval: 5, key_ttl: 0s, wait: 0s}\n---\n"))
	f.Add([]byte("x: &c {interval: 5}\nredis: [{addrs: [a:1], canary: *c, tls: {<<: *c}}]\n"))
	f.Add([]byte("mirrors: [{name: m, partition_metrics: full, connect: {url: '127.0.0.1:8083?t=1'}}]\nkafka: [{bootstrap_servers: a:1}]\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg, err := config.Parse(b)
		if err == nil && cfg == nil {
			t.Fatal("nil config without error")
		}
	})
}

// A module says where it may go: one with credentials must list where, one
// without must list or say any; TLS verifies each target's own name. A
// cluster of the file takes neither key.
func TestModulesSayWhereTheyMayGo(t *testing.T) {
	const secret = "{env: HOME}"
	for _, c := range []struct{ file, says string }{
		{"kafka_modules:\n  - {name: m, sasl: {mechanism: PLAIN, username: u, password: " + secret + "}}\n",
			`kafka module 1 ("m"): the module carries credentials (sasl) and has no allowed_targets: add allowed_targets:`},
		{"kafka_modules:\n  - {name: m, tls: {enabled: true, cert_file: testdata/none.pem, key_file: testdata/none.key}}\n",
			"carries credentials (tls.cert_file, tls.key_file) and has no allowed_targets"},
		{"kafka_modules:\n  - {name: m, canary: {enabled: true}}\n", "carries credentials (canary.enabled, a write canary) and has no allowed_targets"},
		{"redis_modules:\n  - {name: m, username: u, password: " + secret + "}\n",
			`redis module 1 ("m"): the module carries credentials (username, password) and has no allowed_targets`},
		{"redis_modules:\n  - {name: m, password: " + secret + ", allow_any_target: true}\n",
			"allow_any_target: true is refused for a module that carries credentials (password)"},
		{"redis_modules:\n  - {name: m}\n",
			`redis module 1 ("m"): the module says nowhere where its targets may be: add allowed_targets: [HOST:PORTS, ...] listing them, or allow_any_target: true`},
		{"redis_modules:\n  - {name: m, allowed_targets: [\"a:1\"], allow_any_target: true}\n", "are both set: keep one"},
		{"redis_modules:\n  - {name: m, allow_any_target: true, tls: {enabled: true, server_name: redis.prod}}\n", "tls.server_name is refused in a module"},
		{"redis_modules:\n  - {name: m, password: " + secret + ", allowed_targets: [\"a:1\"], tls: {enabled: true, insecure_skip_verify: true}}\n",
			"tls.insecure_skip_verify: true is refused in a module that carries credentials (password)"},
		{"kafka:\n  - {bootstrap_servers: [\"a:1\"], allowed_targets: [\"a:1\"]}\n", `kafka cluster 1 ("kafka"): allowed_targets and allow_any_target are keys of a module (kafka_modules:)`},
		{"redis:\n  - {addrs: [\"a:1\"], allow_any_target: true}\n", "are keys of a module (redis_modules:)"},
	} {
		if _, err := config.Parse([]byte(c.file)); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("Parse(%q): %v, want an error saying %q", c.file, err, c.says)
		}
	}
	for _, good := range []string{
		"kafka_modules:\n  - {name: m, allow_any_target: true}\n",
		"kafka_modules:\n  - {name: m, sasl: {mechanism: PLAIN, username: u, password: " + secret + "}, allowed_targets: [\"*.prod:9092\"]}\n",
		"redis_modules:\n  - {name: m, allow_any_target: true, tls: {enabled: true, insecure_skip_verify: true}}\n",
		"redis_modules:\n  - {name: m, password: " + secret + ", allowed_targets: [10.0.0.0/8:6379], tls: {enabled: true}}\n",
	} {
		if _, err := config.Parse([]byte(good)); err != nil {
			t.Errorf("Parse(%q): %v", good, err)
		}
	}
}

// The module's cluster at a target says whether the module allows it.
func TestModuleClusterCheckTarget(t *testing.T) {
	cfg, err := config.Parse([]byte("kafka_modules:\n  - {name: open, allow_any_target: true}\n  - {name: fenced, allowed_targets: [\"127.0.0.1:9092\"]}\n" +
		"redis_modules:\n  - {name: fenced, allowed_targets: [\"[::1]:6379\"]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	open := func(addrs []string) kafkasettings.Cluster {
		c, _ := config.ModuleAt[kafkasettings.Cluster](cfg, "kafka", "open", "x", addrs)
		return c
	}
	fenced := func(addrs []string) kafkasettings.Cluster {
		c, _ := config.ModuleAt[kafkasettings.Cluster](cfg, "kafka", "fenced", "x", addrs)
		return c
	}
	redis := func(addrs []string) redissettings.Cluster {
		c, _ := config.ModuleAt[redissettings.Cluster](cfg, "redis", "fenced", "x", addrs)
		return c
	}
	for _, c := range []struct {
		check config.TargetChecker
		ok    bool
	}{
		{open([]string{"203.0.113.1:9092"}), true},
		{fenced([]string{"127.0.0.1:9092"}), true},
		{fenced([]string{"127.0.0.1:9093"}), false},
		{redis([]string{"[::1]:6379"}), true},
		{redis([]string{"127.0.0.1:6379"}), false},
	} {
		if err := c.check.CheckTarget(); (err == nil) != c.ok {
			t.Errorf("%+v: CheckTarget() = %v, want allowed %v", c.check, err, c.ok)
		}
	}
}

// A module is a cluster entry without its address: checked as a cluster
// is (every key, nested durations and secrets included), its address
// refused by name, and At gives the cluster a probe's target asks for.
func TestModules(t *testing.T) {
	cfg, err := config.Parse([]byte(`kafka_modules:
  - name: sasl
    refresh_interval: 2s
    sasl: {mechanism: PLAIN, username: u, password: {env: HOME}}
    allowed_targets: [127.0.0.0/8:9092-9093]
redis_modules:
  - name: acl
    username: monitor
    allowed_targets: [127.0.0.1:6379]
`))
	if err != nil {
		t.Fatal(err)
	}
	k, ok := config.ModuleAt[kafkasettings.Cluster](cfg, "kafka", "sasl", "127.0.0.1:9092,127.0.0.1:9093", []string{"127.0.0.1:9092", "127.0.0.1:9093"})
	if !ok {
		t.Fatal("no kafka module sasl")
	}
	if k.Name != "127.0.0.1:9092,127.0.0.1:9093" || !reflect.DeepEqual(k.BootstrapServers, []string{"127.0.0.1:9092", "127.0.0.1:9093"}) ||
		k.RefreshInterval.String() != "2s" || k.SASL.Username != "u" || k.Canary.Enabled || k.RequestTimeout != kafkasettings.DefaultRequestTimeout {
		t.Errorf("the module's cluster: %+v", k)
	}
	if r, ok := config.ModuleAt[redissettings.Cluster](cfg, "redis", "acl", "127.0.0.1:6379", []string{"127.0.0.1:6379"}); !ok || r.Username != "monitor" {
		t.Errorf("redis module acl: %+v, %v", r, ok)
	}
	if _, ok := config.ModuleAt[kafkasettings.Cluster](cfg, "kafka", "acl", "x", []string{"127.0.0.1:1"}); ok {
		t.Error("a Redis module's name found among the Kafka modules")
	}

	for _, c := range []struct{ file, says string }{
		{"kafka_modules:\n  - {name: m, bootstrap_servers: [k:9092], allow_any_target: true}\n", `kafka module 1 ("m"): bootstrap_servers is set: a module holds everything but the address`},
		{"redis_modules:\n  - {name: m, addrs: [r:6379], allow_any_target: true}\n", `redis module 1 ("m"): addrs is set`},
		{"kafka_modules:\n  - {name: m, canary: {interval: 5}}\n", "kafka_modules[0].canary.interval: 5 is not a duration"},
		{"kafka_modules:\n  - {name: m, sasl: {mechanism: PLAIN, username: u, password: hunter2}}\n", "secrets are not accepted inline"},
		{"kafka_modules:\n  - {name: m, allow_any_target: true}\n  - {name: m, allow_any_target: true}\n", `kafka module "m" is defined twice`},
	} {
		_, err := config.Parse([]byte(c.file))
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("Parse(%q): %v, want an error saying %q", c.file, err, c.says)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("the error echoes the secret: %v", err)
		}
	}
}

// The type walk's hints come from the fields' tags, wherever the field is.
func TestTypeHintsFromFieldTags(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{"kafka:\n  - bootstrap_servers: host:9092\n", "kafka[0].bootstrap_servers: \"host:9092\" is not a list; write it as a list, such as [host:9092]"},
		{"redis:\n  - addrs: host:6379\n", "such as [host:6379]"},
		{"mirrors:\n  - partition_metrics: lean\n", "the modes lean, unhealthy, full and none are a kafka cluster's"},
		{"kafka:\n  - canary: {enabled: maybe}\n", "kafka[0].canary.enabled: \"maybe\" is not true or false; write true or false"},
		{"redis:\n  - addrs: [\"127.0.0.1:1\"]\n    canary: {interval: 0s}\n", "redis[0].canary.interval: "},
	} {
		_, err := config.Parse([]byte(tc.file))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", tc.file, err, tc.want)
		}
	}
	// canary.wait: 0s means no WAIT, and is accepted as written.
	if _, err := config.Parse([]byte("redis:\n  - addrs: [\"127.0.0.1:1\"]\n    canary: {wait: 0s}\n")); err != nil {
		t.Errorf("canary.wait: 0s refused: %v", err)
	}
}

// The fingerprint is how the collector manager tells whether a cluster
// changed on reload: it must change when a setting, a secret or a TLS file
// changes, stay the same otherwise, and never contain the secret.
func TestFingerprintFollowsSecretAndTLSFiles(t *testing.T) {
	dir := t.TempDir()
	password := filepath.Join(dir, "password")
	ca := filepath.Join(dir, "ca.pem")
	write := func(path, content string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(password, "first-Secret\n")
	write(ca, "ca one")
	cluster := redissettings.Cluster{Addrs: []string{"127.0.0.1:7000"}, Password: config.Secret{File: password}, TLS: config.TLS{Enabled: true, CAFile: ca}}
	fingerprint := func(c interface{ Fingerprint() (string, error) }) string {
		t.Helper()
		fp, err := c.Fingerprint()
		if err != nil {
			t.Fatal(err)
		}
		return fp
	}

	first := fingerprint(cluster)
	if fingerprint(cluster) != first {
		t.Fatal("fingerprint is not stable")
	}
	if strings.Contains(first, "first-Secret") {
		t.Fatalf("the secret is in the fingerprint: %s", first)
	}
	write(password, "second-Secret\n")
	second := fingerprint(cluster)
	if second == first {
		t.Error("fingerprint unchanged after the secret file changed")
	}
	write(ca, "ca two")
	third := fingerprint(cluster)
	if third == second {
		t.Error("fingerprint unchanged after the CA file changed")
	}
	if err := os.Remove(ca); err != nil {
		t.Fatal(err)
	}
	if fingerprint(cluster) == third {
		t.Error("fingerprint unchanged after the CA file went away")
	}
	write(ca, "ca two")
	if fingerprint(cluster) != third {
		t.Error("fingerprint differs with the same settings and files")
	}
	changed := cluster
	changed.Addrs = []string{"127.0.0.1:7001"}
	if fingerprint(changed) == third {
		t.Error("fingerprint unchanged after the addresses changed")
	}

	t.Setenv("FAILOVER_TEST_SECRET", "env-Secret")
	kafka := kafkasettings.Cluster{BootstrapServers: []string{"127.0.0.1:9092"},
		SASL: kafkasettings.SASL{Mechanism: "PLAIN", Username: "u", Password: config.Secret{Env: "FAILOVER_TEST_SECRET"}}}
	before := fingerprint(kafka)
	if strings.Contains(before, "env-Secret") {
		t.Errorf("the secret is in the fingerprint: %s", before)
	}
	t.Setenv("FAILOVER_TEST_SECRET", "env-Secret-2")
	if fingerprint(kafka) == before {
		t.Error("fingerprint unchanged after the SASL password variable changed")
	}
}

// An unknown key is refused by the decoder with the name of the type it is
// not a field of, as the types were named when the settings were config's
// (docs/faults.md), in every section and its modules.
func TestUnknownKeysNameTheTypesAsBefore(t *testing.T) {
	_, err := config.Parse([]byte("kafka:\n  - bootstrap_servers: [a:1]\n    refresh_intervall: 5s\n    canary: {x: 1}\n    sasl: {y: 1}\n    topics: {z: 1}\n" +
		"redis:\n  - addrs: [a:1]\n    foo: 1\n    canary: {x: 1}\n    slot_stats: {q: 1}\n    tls: {r: 1}\n" +
		"mirrors:\n  - name: m\n    bar: 1\n    connect: {u: 1}\n" +
		"kafka_modules:\n  - name: m\n    baz: 1\nredis_modules:\n  - name: m\n    qux: 1\n"))
	want := []string{
		"line 3: field refresh_intervall not found in type config.KafkaCluster",
		"line 4: field x not found in type config.KafkaCanary",
		"line 5: field y not found in type config.SASL",
		"line 6: field z not found in type config.TopicFilter",
		"line 9: field foo not found in type config.RedisCluster",
		"line 10: field x not found in type config.RedisCanary",
		"line 11: field q not found in type config.RedisSlotStats",
		"line 12: field r not found in type config.TLS",
		"line 15: field bar not found in type config.Mirror",
		"line 16: field u not found in type config.MirrorConnect",
		"line 19: field baz not found in type config.KafkaCluster",
		"line 22: field qux not found in type config.RedisCluster",
	}
	for _, w := range want {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v, want %q", err, w)
		}
	}
	if err != nil && strings.Contains(err.Error(), "settings.") {
		t.Errorf("error names a settings package's type: %v", err)
	}
	_, err = config.Parse([]byte("kafka:\n  - bootstrap_servers: [a:1]\n    failure_budget: {unwatched_topics: [a]}\n"))
	if want := "line 3: cannot unmarshal !!seq into config.UnwatchedTopics"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want %q", err, want)
	}
}

// The table's order is kafka, redis, mirrors, then the modules sections,
// whatever the order the settings packages' inits register them in (Go
// runs kafka's, then mirror's, then redis's): mirrors are completed after
// the kafka clusters they name, and the messages list the keys so.
func TestSectionsInTheirOrder(t *testing.T) {
	var keys []string
	for _, s := range config.Sections() {
		keys = append(keys, s.Key)
	}
	if got, want := strings.Join(keys, " "), "kafka redis mirrors kafka_modules redis_modules"; got != want {
		t.Errorf("sections %s, want %s", got, want)
	}
	file := config.FileType()
	for i, s := range config.Sections() {
		if f := file.Field(i); f.Tag.Get("yaml") != s.Key || f.Type != s.Type() {
			t.Errorf("the file's field %d is %s %s, want the section %s's, of type %s", i, f.Tag.Get("yaml"), f.Type, s.Key, s.Type())
		}
	}
}
