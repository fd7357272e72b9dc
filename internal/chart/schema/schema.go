// Package schema writes the JSON schema of the config file's types, as
// the chart's values.schema.json holds it: strict as the file's decoder
// is, from whatever sections the config's table has (a system's own
// included), so that Helm refuses a key the exporter does not know.
package schema

import (
	"reflect"
	"strings"
	"time"

	"github.com/failover-exporter/failover_exporter/config"
)

var (
	enumType     = reflect.TypeOf((*config.Enum)(nil)).Elem()
	SecretType   = reflect.TypeOf(config.Secret{})
	tlsType      = reflect.TypeOf(config.TLS{})
	durationType = reflect.TypeOf(time.Duration(0))
	RegexpType   = reflect.TypeOf(config.Regexp{})
)

// Fields are a struct type's fields by their YAML key, in order.
func Fields(t reflect.Type) []reflect.StructField {
	var out []reflect.StructField
	for i := range t.NumField() {
		f := t.Field(i)
		key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if key == "" || key == "-" || !f.IsExported() {
			continue
		}
		out = append(out, f)
	}
	return out
}

// Key is a field's YAML key.
func Key(f reflect.StructField) string {
	key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	return key
}

// IsFilePlace: the TLS settings that name files (ca_file, cert_file,
// key_file) are where a certificate or key is read from.
func IsFilePlace(parent reflect.Type, f reflect.StructField) bool {
	return parent == tlsType && f.Type.Kind() == reflect.String && strings.HasSuffix(Key(f), "_file")
}

// Schemas of the secret and file places: no type, so that the chart's
// template, not the schema, answers a secret written inline (with "use a
// Secret").
var (
	secretPlaceSchema = map[string]any{
		"description": "A secret: {secretKeyRef: {name: SECRET, key: KEY}}, mounted as a file, or {file: PATH} for a file you mount with extraVolumes. Never the secret itself: the config file is a ConfigMap.",
	}
	filePlaceSchema = map[string]any{
		"description": "A file: {secretKeyRef: {name: SECRET, key: KEY}}, mounted as a file, or the path of a file you mount with extraVolumes.",
		"type":        []any{"string", "object"},
	}
)

// Config is the JSON schema of a config type, strict as the config
// file's decoder is (an unknown key is an error).
func Config(t reflect.Type) map[string]any {
	switch {
	case t == durationType:
		return map[string]any{"type": "string", "description": "A duration with its unit, such as 5s or 1m."}
	case t.Implements(enumType):
		return map[string]any{"enum": reflect.Zero(t).Interface().(config.Enum).Values()}
	case t == SecretType:
		return secretPlaceSchema
	}
	switch t.Kind() {
	case reflect.Pointer:
		if t.Elem() == RegexpType {
			return map[string]any{"type": "string", "description": "A regular expression, anchored at both ends."}
		}
		return Config(t.Elem())
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Slice:
		return map[string]any{"type": []any{"array", "null"}, "items": Config(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": Config(t.Elem())}
	case reflect.Struct:
		props := map[string]any{}
		for _, f := range Fields(t) {
			if IsFilePlace(t, f) {
				props[Key(f)] = filePlaceSchema
			} else {
				props[Key(f)] = Config(f.Type)
			}
		}
		return map[string]any{"type": "object", "additionalProperties": false, "properties": props}
	}
	panic("configSchema: no schema for " + t.String())
}
