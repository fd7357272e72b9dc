package chart

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/failover-exporter/failover_exporter/config"
	"github.com/failover-exporter/failover_exporter/internal/chart/schema"
	"github.com/failover-exporter/failover_exporter/internal/lab"
	// The registry links every system's settings package, each of which
	// registers its section of the config file: a new system's section is
	// then included here with no list to keep.
	_ "github.com/failover-exporter/failover_exporter/systems"
)

// refPlace is a place of the config file that takes a secret ({file:
// PATH}) or the path of a file, found in the config package's types: where
// the chart accepts a secretKeyRef.
type refPlace struct {
	section string   // kafka, redis, sentinel, mirrors, a _modules list
	path    []string // keys within one entry of the section
	secret  bool     // a config.Secret; else a file path
}

func (p refPlace) String() string {
	return "config." + p.section + "[0]." + strings.Join(p.path, ".")
}

// configSections are the config file's top-level keys: the sections table's.
func configSections() []string {
	var out []string
	for _, f := range schema.Fields(config.FileType()) {
		out = append(out, schema.Key(f))
	}
	return out
}

// configRefPlaces walks the config package's types for every secret and
// file place.
func configRefPlaces() []refPlace {
	var out []refPlace
	var walk func(section string, path []string, t reflect.Type)
	walk = func(section string, path []string, t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || t == schema.RegexpType {
			return
		}
		for _, f := range schema.Fields(t) {
			p := append(slices.Clone(path), schema.Key(f))
			switch {
			case f.Type == schema.SecretType:
				out = append(out, refPlace{section, p, true})
			case schema.IsFilePlace(t, f):
				out = append(out, refPlace{section, p, false})
			default:
				walk(section, p, f.Type)
			}
		}
	}
	for _, f := range schema.Fields(config.FileType()) {
		walk(schema.Key(f), nil, f.Type)
	}
	return out
}

// values.schema.json makes Helm refuse values of the wrong type before any
// template runs; its config part is the config package's types, so that a
// key the exporter does not know (a typo, a section it has not) is refused
// by name. -update rewrites it.
func TestChartValuesSchema(t *testing.T) {
	path := filepath.Join(lab.RepoRoot(t), Path, "values.schema.json")
	var values map[string]any
	if err := json.Unmarshal(readFile(t, path), &values); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	configPart := schema.Config(config.FileType())
	configPart["description"] = "The exporter's config file (docs/configuration.md), each secret a secretKeyRef. Written from the config package's types."
	values["properties"].(map[string]any)["config"] = configPart
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(values); err != nil {
		t.Fatal(err)
	}
	if *update {
		writeFile(t, path, b.String())
	}
	if !bytes.Equal(readFile(t, path), b.Bytes()) {
		t.Errorf("%s/values.schema.json: its config part differs from the config package's types; run\n  go test ./internal/chart -run TestChartValuesSchema -update", Path)
	}
	// The chart's own defaults pass it (Helm checks the merged values).
	if err := Lint(filepath.Join(lab.RepoRoot(t), Path), map[string]any{"config": map[string]any{"redis": []any{map[string]any{"addrs": []any{"r:6379"}}}}}); err != nil {
		t.Errorf("helm lint --strict with the default values: %v", err)
	}
}

// baseConfig is the least config that holds an entry of section, for a
// place of it to be set in.
func baseConfig(section string) map[string]any {
	kafka := func(name string) map[string]any {
		return map[string]any{"name": name, "bootstrap_servers": []any{"k:9092"}}
	}
	switch section {
	case "kafka":
		return map[string]any{"kafka": []any{kafka("a")}}
	case "redis":
		return map[string]any{"redis": []any{map[string]any{"addrs": []any{"r:6379"}}}}
	case "sentinel":
		return map[string]any{"sentinel": []any{map[string]any{"sentinels": []any{"s:26379"}}}}
	case "kafka_modules", "redis_modules", "sentinel_modules":
		return map[string]any{section: []any{map[string]any{"name": "m", "allowed_targets": []any{"*.prod.internal:*"}}}}
	case "mirrors":
		return map[string]any{
			"kafka":   []any{kafka("a"), kafka("b")},
			"mirrors": []any{map[string]any{"name": "m", "source": "a", "target": "b", "connect": map[string]any{"url": "https://connect:8083"}}},
		}
	}
	return nil
}

// setPath sets the value at path under m, making the maps on the way.
func setPath(m map[string]any, path []string, v any) {
	for _, k := range path[:len(path)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	m[path[len(path)-1]] = v
}

// renderConfig renders the chart with cfg as values.config (schema checked
// unless noSchema, as with helm --skip-schema-validation) and returns the
// rendered documents.
func renderConfig(t *testing.T, cfg map[string]any, noSchema bool) (*Rendered, error) {
	t.Helper()
	ch, err := Load(filepath.Join(lab.RepoRoot(t), Path))
	if err != nil {
		t.Fatal(err)
	}
	if noSchema {
		ch.Schema = nil
	}
	return Render(ch, "fe", "default", map[string]any{"config": cfg})
}

// Every place the config file takes a secret or a file, found in the
// config package's types (the mirror flows' Connect block among them),
// takes a secretKeyRef: the config gets the mounted key's path, the pod
// mounts that key. A secret written inline there fails the render, saying
// to use a Secret, and is never echoed.
func TestChartSecretPlaces(t *testing.T) {
	places := configRefPlaces()
	var names []string
	for _, p := range places {
		names = append(names, p.String())
	}
	// The places this test must at least find; more are welcome.
	for _, want := range []string{
		"config.kafka[0].sasl.password", "config.kafka[0].tls.ca_file", "config.kafka[0].tls.key_file",
		"config.redis[0].password", "config.redis[0].tls.cert_file",
		"config.sentinel[0].sentinel_connection.password", "config.sentinel[0].node_connection.password",
		"config.sentinel[0].sentinel_connection.tls.ca_file", "config.sentinel[0].sentinel_connection.tls.cert_file", "config.sentinel[0].sentinel_connection.tls.key_file",
		"config.sentinel[0].node_connection.tls.ca_file", "config.sentinel[0].node_connection.tls.cert_file", "config.sentinel[0].node_connection.tls.key_file",
		"config.sentinel_modules[0].sentinel_connection.password", "config.sentinel_modules[0].node_connection.password",
		"config.mirrors[0].connect.password", "config.mirrors[0].connect.tls.ca_file", "config.mirrors[0].connect.tls.cert_file", "config.mirrors[0].connect.tls.key_file",
	} {
		if !slices.Contains(names, want) {
			t.Errorf("the config package's types have no secret or file place %s (found %v)", want, names)
		}
	}
	const secretName, key = "exporter-creds", "the-key"
	const mounted = "/etc/failover_exporter/secrets/" + secretName + "/" + key
	for _, place := range places {
		t.Run(place.String(), func(t *testing.T) {
			cfg := baseConfig(place.section)
			entry := cfg[place.section].([]any)[0].(map[string]any)
			setPath(entry, place.path, map[string]any{"secretKeyRef": map[string]any{"name": secretName, "key": key}})
			out, err := renderConfig(t, cfg, false)
			if err != nil {
				t.Fatalf("a secretKeyRef at %s: %v", place, err)
			}
			rendered := renderedConfig(t, out)
			got := dig(rendered[place.section].([]any)[0], place.path...)
			var want any = mounted
			if place.secret {
				want = map[string]any{"file": mounted}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("rendered %s: %v, want %v", place, got, want)
			}
			objs := decodeAll(t, out)
			spec := podSpec(t, objs)
			mountedKey := false
			for _, v := range spec.Volumes {
				if v.Secret != nil && v.Secret.SecretName == secretName {
					for _, item := range v.Secret.Items {
						mountedKey = mountedKey || (item.Key == key && item.Path == key)
					}
					for _, m := range spec.Containers[0].VolumeMounts {
						if m.Name == v.Name && m.MountPath != "/etc/failover_exporter/secrets/"+secretName {
							t.Errorf("Secret %s mounted at %s", secretName, m.MountPath)
						}
					}
				}
			}
			if !mountedKey {
				t.Errorf("no volume mounts key %s of Secret %s: %+v", key, secretName, spec.Volumes)
			}

			// Written inline, with and without the schema.
			inline := "hunter2secret"
			if !place.secret {
				inline = "-----BEGIN PRIVATE KEY-----\nhunter2secret\n-----END PRIVATE KEY-----\n"
			}
			setPath(entry, place.path, inline)
			for _, noSchema := range []bool{false, true} {
				_, err := renderConfig(t, cfg, noSchema)
				if err == nil || !strings.Contains(err.Error(), place.String()) || !strings.Contains(err.Error(), "use a Secret") {
					t.Errorf("inline at %s (schema skipped: %v): got %v, want an error naming the key and saying to use a Secret", place, noSchema, err)
				}
				if err != nil && strings.Contains(err.Error(), "hunter2secret") {
					t.Errorf("the error echoes the inline secret: %v", err)
				}
			}
		})
	}
}

// renderedConfig is the config.yml of the rendered ConfigMap, decoded.
func renderedConfig(t *testing.T, out *Rendered) map[string]any {
	t.Helper()
	for _, cm := range configMaps(decodeAll(t, out)) {
		if data, ok := cm.Data["config.yml"]; ok {
			var cfg map[string]any
			if err := yaml.Unmarshal([]byte(data), &cfg); err != nil {
				t.Fatalf("config.yml: %v", err)
			}
			return cfg
		}
	}
	t.Fatal("no ConfigMap holds config.yml")
	return nil
}

func decodeAll(t *testing.T, out *Rendered) []object {
	t.Helper()
	var objs []object
	for _, doc := range out.Docs {
		o, err := decodeStrict(doc)
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, o)
	}
	return objs
}

// The reproductions of issue 33, items 1, 2 and 4: each is refused with a
// message naming the key or value, or (long Secret names) rendered right.
func TestChartRefusesIssue33(t *testing.T) {
	redis := map[string]any{"addrs": []any{"r:6379"}}
	for _, tc := range []struct {
		name   string
		values map[string]any
		// want are the parts of the message, in any order.
		want []string
		// template: the chart's templates refuse it too, without the schema.
		template bool
	}{
		{"a section the config file has not", map[string]any{"config": map[string]any{"redis": []any{redis}, "redsi": []any{redis}}},
			[]string{"redsi"}, true},
		{"config.kafka as a map", map[string]any{"config": map[string]any{"kafka": map[string]any{"bootstrap_servers": []any{"k:9092"}}}},
			[]string{"config", "kafka"}, true},
		{"a cluster key the exporter does not know", map[string]any{"config": map[string]any{"redis": []any{map[string]any{"addrs": []any{"r:6379"}, "passwd": "hunter2secret"}}}},
			[]string{"passwd"}, false},
		{"inline password", map[string]any{"config": map[string]any{"redis": []any{map[string]any{"addrs": []any{"r:6379"}, "password": "hunter2secret"}}}},
			[]string{"config.redis[0].password", "use a Secret"}, true},
		{"a flow naming a cluster the kafka list has not", map[string]any{"config": map[string]any{
			"kafka":   []any{map[string]any{"name": "a", "bootstrap_servers": []any{"k:9092"}}},
			"mirrors": []any{map[string]any{"name": "m", "source": "a", "target": "dr"}}}},
			[]string{"config.mirrors[0].target", `"dr"`, "its clusters are a"}, true},
		{"a flow and no kafka list", map[string]any{"config": map[string]any{
			"redis":   []any{redis},
			"mirrors": []any{map[string]any{"name": "m", "source": "a", "target": "b"}}}},
			[]string{"config.mirrors[0].source", "config.kafka is empty"}, true},
		{"replicaCount a word", map[string]any{"replicaCount": "two", "config": map[string]any{"redis": []any{redis}}},
			[]string{"replicaCount"}, false},
		{"port a word", map[string]any{"port": "abc", "config": map[string]any{"redis": []any{redis}}},
			[]string{"port"}, false},
		{"networkPolicy.from a word", map[string]any{"networkPolicy": map[string]any{"enabled": true, "from": "everyone"}, "config": map[string]any{"redis": []any{redis}}},
			[]string{"networkPolicy", "from"}, false},
		{"a chart value the chart has not", map[string]any{"replicas": 2, "config": map[string]any{"redis": []any{redis}}},
			[]string{"replicas"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			schemaRefused := false
			for _, noSchema := range []bool{false, true} {
				if noSchema && !tc.template {
					continue
				}
				ch, err := Load(filepath.Join(lab.RepoRoot(t), Path))
				if err != nil {
					t.Fatal(err)
				}
				if noSchema {
					ch.Schema = nil
				}
				_, err = Render(ch, "fe", "default", tc.values)
				if err == nil {
					t.Fatalf("rendered (schema skipped: %v); want an error naming %v", noSchema, tc.want)
				}
				t.Logf("schema skipped: %v: %v", noSchema, err)
				if !noSchema {
					schemaRefused = strings.Contains(err.Error(), "specifications of the schema")
				}
				for _, w := range tc.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("schema skipped: %v: %v; want it to name %q", noSchema, err, w)
					}
				}
				if strings.Contains(err.Error(), "hunter2secret") {
					t.Errorf("the error echoes the secret: %v", err)
				}
				if strings.Contains(err.Error(), "%!") {
					t.Errorf("the error is not English: %v", err)
				}
			}
			// helm lint --strict refuses what the schema refuses (it passed
			// these); a template's fail is only an INFO to helm lint.
			if schemaRefused {
				if err := Lint(filepath.Join(lab.RepoRoot(t), Path), tc.values); err == nil || !strings.Contains(err.Error(), tc.want[0]) {
					t.Errorf("helm lint --strict: %v; want an error naming %q", err, tc.want[0])
				}
			}
		})
	}

	t.Run("Secret names sharing their first 60 characters", func(t *testing.T) {
		long := strings.Repeat("s", 60)
		names := []string{long + "-one", long + "-two", "with.dot", "with-dot"}
		var clusters []any
		for i, n := range names {
			clusters = append(clusters, map[string]any{"name": "r" + string(rune('a'+i)), "addrs": []any{"r:6379"},
				"password": map[string]any{"secretKeyRef": map[string]any{"name": n, "key": "password"}}})
		}
		out, err := renderConfig(t, map[string]any{"redis": clusters}, false)
		if err != nil {
			t.Fatal(err)
		}
		spec := podSpec(t, decodeAll(t, out))
		volumeOf := map[string]string{}
		label := regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
		for _, v := range spec.Volumes {
			if v.Secret == nil {
				continue
			}
			if prev, ok := volumeOf[v.Name]; ok {
				t.Errorf("Secrets %s and %s share the volume name %s", prev, v.Secret.SecretName, v.Name)
			}
			volumeOf[v.Name] = v.Secret.SecretName
			if !label.MatchString(v.Name) {
				t.Errorf("volume name %q (Secret %s) is not a DNS label of at most 63 characters", v.Name, v.Secret.SecretName)
			}
		}
		if len(volumeOf) != len(names) {
			t.Errorf("%d Secret volumes for %d Secrets: %v", len(volumeOf), len(names), volumeOf)
		}
		for _, m := range spec.Containers[0].VolumeMounts {
			if s, ok := volumeOf[m.Name]; ok && m.MountPath != "/etc/failover_exporter/secrets/"+s {
				t.Errorf("volume of Secret %s mounted at %s", s, m.MountPath)
			}
		}
	})
}

// The chart's sections are the config file's: each section config.Config
// has is passed through (the mirrors with their Connect block among them),
// and one it has not is refused by name.
func TestChartConfigSections(t *testing.T) {
	sections := configSections()
	if !slices.Contains(sections, "mirrors") {
		t.Fatalf("config.Config sections %v: no mirrors", sections)
	}
	for _, section := range sections {
		cfg := baseConfig(section)
		if cfg == nil {
			t.Errorf("section %s of the config file: this test has no example of it (baseConfig); add one, and to the chart's refPlaces in _helpers.tpl", section)
			continue
		}
		out, err := renderConfig(t, cfg, true)
		if err != nil {
			t.Errorf("section %s: %v", section, err)
			continue
		}
		if got := renderedConfig(t, out); !reflect.DeepEqual(got[section], cfg[section]) {
			t.Errorf("rendered config.%s %v, want %v", section, got[section], cfg[section])
		}
	}
}
