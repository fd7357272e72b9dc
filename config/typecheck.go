package config

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// checkTypes walks the file's YAML tree alongside the Config type, by the
// fields' yaml tags, through every nested struct, list, map and pointer,
// and refuses what decoding would refuse with a message that names no key
// ("cannot unmarshal !!int `5` into time.Duration"), or what it would
// accept and silently replace: an explicit zero duration, which the
// defaults would turn into the default; an empty regular expression,
// which matches no topic; a secret mapping that names no source or an
// unknown key. Each message carries the line and the full key path, as
// in `line 7: redis[0].canary.interval: 5 is not a duration; ...`, one
// per bad value.
//
// Unknown keys of the config's own structs are left to the decoder
// (KnownFields), and so are the settings of types with an UnmarshalYAML
// of their own that this walk does not know (the failure budgets), which
// check their keys and values where they are read.
func checkTypes(doc *yaml.Node) error {
	w := typeWalker{budget: maxTypeCheckSteps}
	w.keys(doc)
	if len(w.errs) > 0 {
		return errors.Join(w.errs...)
	}
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		root := doc.Content[0]
		if root.Kind != yaml.MappingNode && !isNull(root) {
			return fmt.Errorf("line %d: the file must be a mapping of %s lists", root.Line, sectionKeys())
		}
		w.walk(root, fileType(), "")
	}
	if w.budget < 0 {
		w.errs = append(w.errs, fmt.Errorf("the file's aliases expand to more than %d values", maxTypeCheckSteps))
	}
	return errors.Join(w.errs...)
}

// maxTypeCheckSteps bounds the walk: aliases (*name) may repeat a subtree
// many times, and a file of nested aliases would otherwise make the walk
// exponential. A 1 MiB file of plain values has well under a million.
const maxTypeCheckSteps = 4_000_000

// keys refuses a mapping key that is not a name (a list or a mapping as
// a key, as in {{a: 1}: b}), anywhere in the file, aliases not followed:
// no setting has such a key, and the decoder panics on one beside a
// merge key (<<).
func (w *typeWalker) keys(n *yaml.Node) {
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := n.Content[i]
			if key.Kind == yaml.AliasNode && key.Alias != nil {
				key = key.Alias
			}
			if key.Kind != yaml.ScalarNode {
				w.errs = append(w.errs, fmt.Errorf("line %d: a key must be a name, not %s", n.Content[i].Line, describe(key)))
			}
		}
	}
	for _, c := range n.Content {
		w.keys(c)
	}
}

type typeWalker struct {
	errs   []error
	budget int
	fields map[reflect.Type]map[string]reflect.StructField
}

var (
	durationType    = reflect.TypeOf(time.Duration(0))
	secretType      = reflect.TypeOf(Secret{})
	regexpType      = reflect.TypeOf(Regexp{})
	unmarshalerType = reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()
)

// The walk's hints are the fields' own, in struct tags next to their yaml
// key, so that a system's config file carries them and this walk names no
// system's type:
//
//	example:"[host:9092]"  what a list field's message shows it should look like
//	hint:"..."             what a boolean field takes, when that needs more than "true or false"
//	zero:"allowed"         an explicit 0s duration has a meaning of its own (it is also the default)

func (w *typeWalker) errorf(n *yaml.Node, path, format string, args ...any) {
	w.errs = append(w.errs, fmt.Errorf("line %d: %s: %s", n.Line, path, fmt.Sprintf(format, args...)))
}

// walk checks node n, at key path path, against Go type t.
func (w *typeWalker) walk(n *yaml.Node, t reflect.Type, path string) {
	w.walkField(n, t, path, "")
}

// walkField is walk for a node that fills a struct field of tag tag (its
// hints), empty for list items and map values.
func (w *typeWalker) walkField(n *yaml.Node, t reflect.Type, path string, tag reflect.StructTag) {
	if w.budget--; w.budget < 0 {
		return
	}
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			return
		}
		n = n.Alias
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t {
	case secretType:
		w.secret(n, path)
		return
	case durationType:
		w.duration(n, path, tag.Get("zero") == "allowed")
		return
	case regexpType:
		w.regexp(n, path)
		return
	}
	if isNull(n) {
		return // the zero value, as if the key were left out
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return // checked where it is read
	}
	switch t.Kind() {
	case reflect.Struct:
		w.mapping(n, t, path, nil)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			example := tag.Get("example")
			if example == "" {
				example = "[a, b]"
			}
			w.errorf(n, path, "%s is not a list; write it as a list, such as %s", describe(n), example)
			return
		}
		for i, item := range n.Content {
			w.walk(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			w.errorf(n, path, "%s is not a mapping; write it as KEY: VALUE lines or {KEY: VALUE}", describe(n))
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			w.walk(n.Content[i+1], t.Elem(), path+"."+n.Content[i].Value)
		}
	case reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.Decode(new(bool)) != nil {
			hint := tag.Get("hint")
			if hint == "" {
				hint = "write true or false"
			}
			w.errorf(n, path, "%s is not true or false; %s", describe(n), hint)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if n.Kind != yaml.ScalarNode || n.Decode(reflect.New(t).Interface()) != nil {
			w.errorf(n, path, "%s is not a whole number", describe(n))
		}
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			if key := lastKey(path); key != "" {
				w.errorf(n, path, "%s is not a single value; write one, such as %s: VALUE", describe(n), key)
			} else {
				w.errorf(n, path, "%s is not a single value; each item is one", describe(n))
			}
		}
	}
}

// mapping checks the keys of a struct's mapping that the struct knows;
// unknown ones are the decoder's to refuse. shadowed are keys a mapping
// that merges this one sets itself: their values here are not used.
func (w *typeWalker) mapping(n *yaml.Node, t reflect.Type, path string, shadowed map[string]bool) {
	if n.Kind != yaml.MappingNode {
		at := path
		if at == "" {
			at = "the file"
		}
		w.errorf(n, at, "%s is not a mapping of keys; write KEY: VALUE lines under it", describe(n))
		return
	}
	fields, ok := w.fields[t]
	if !ok {
		fields = yamlFields(t)
		if w.fields == nil {
			w.fields = map[reflect.Type]map[string]reflect.StructField{}
		}
		w.fields[t] = fields
	}
	var merges []*yaml.Node
	own := map[string]bool{}
	for i := 0; i+1 < len(n.Content) && w.budget >= 0; i += 2 {
		key, value := n.Content[i], n.Content[i+1]
		if key.Value == "<<" && key.ShortTag() == "!!merge" {
			merges = append(merges, value)
			continue
		}
		own[key.Value] = true
		f, ok := fields[key.Value]
		if !ok || shadowed[key.Value] {
			continue
		}
		w.walkField(value, f.Type, join(path, key.Value), f.Tag)
	}
	if len(merges) > 0 {
		for key := range shadowed {
			own[key] = true
		}
		for _, m := range merges {
			w.merge(m, t, path, own)
		}
	}
}

// merge walks the mappings a merge key (<<: *anchor) brings in, as part
// of the mapping that holds it.
func (w *typeWalker) merge(n *yaml.Node, t reflect.Type, path string, shadowed map[string]bool) {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind == yaml.SequenceNode {
		for _, c := range n.Content {
			w.merge(c, t, path, shadowed)
		}
		return
	}
	if w.budget--; w.budget >= 0 && n.Kind == yaml.MappingNode {
		w.mapping(n, t, path, shadowed)
	}
}

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

func (w *typeWalker) duration(n *yaml.Node, path string, zeroMeansOff bool) {
	if isNull(n) {
		return
	}
	if n.Kind != yaml.ScalarNode {
		w.errorf(n, path, "%s is not a duration; write one with a unit, such as 5s", describe(n))
		return
	}
	switch n.ShortTag() {
	case "!!int", "!!float":
		example := n.Value + "s"
		if f, err := strconv.ParseFloat(n.Value, 64); err != nil || f <= 0 {
			example = "5s"
		}
		w.errorf(n, path, "%s is not a duration; write it with a unit, such as %s", n.Value, example)
		return
	}
	d, err := time.ParseDuration(n.Value)
	switch {
	case err != nil:
		w.errorf(n, path, "%q is not a duration; write one with a unit, such as 5s or 500ms", n.Value)
	case d < 0 && zeroMeansOff:
		w.errorf(n, path, "%s is negative; write 0s for none, or a positive duration", n.Value)
	case d < 0:
		w.errorf(n, path, "%s must be positive", n.Value)
	case d == 0 && !zeroMeansOff:
		w.errorf(n, path, "%s must be positive; leave the key out for the default", n.Value)
	}
}

func (w *typeWalker) regexp(n *yaml.Node, path string) {
	if isNull(n) {
		return
	}
	if n.Kind != yaml.ScalarNode {
		w.errorf(n, path, "%s is not a regular expression; write one in quotes, such as \"orders.*\"", describe(n))
		return
	}
	if n.Value == "" {
		if lastKey(path) == "exclude" {
			w.errorf(n, path, "\"\" matches no topic, so it excludes nothing; leave the key out")
		} else {
			w.errorf(n, path, "\"\" matches no topic, so nothing would be watched; leave the key out for every topic")
		}
		return
	}
	if _, err := NewRegexp(n.Value); err != nil {
		w.errorf(n, path, "invalid regular expression %q: %v", n.Value, err)
	}
}

// secret checks a {file: PATH} or {env: VARIABLE} mapping strictly: one
// of the two keys, not empty, and nothing else. Neither a value written
// inline nor a key that may be the secret itself is repeated.
func (w *typeWalker) secret(n *yaml.Node, path string) {
	const want = "write {file: PATH} or {env: VARIABLE}"
	switch {
	case isNull(n):
		w.errorf(n, path, "is empty; %s, or leave the key out", want)
		return
	case n.Kind == yaml.ScalarNode:
		w.errorf(n, path, "secrets are not accepted inline; %s", want)
		return
	case n.Kind != yaml.MappingNode:
		w.errorf(n, path, "%s is not a secret; %s", describe(n), want)
		return
	}
	sources := 0
	unknown := false
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, value := n.Content[i], n.Content[i+1]
		if value.Kind == yaml.AliasNode && value.Alias != nil {
			value = value.Alias
		}
		switch key.Value {
		case "file", "env":
			sources++
			what := "the path of the file holding the secret"
			if key.Value == "env" {
				what = "the name of the environment variable holding the secret"
			}
			switch {
			case value.Kind != yaml.ScalarNode:
				w.errorf(value, path+"."+key.Value, "%s is not a single value; give %s", describe(value), what)
			case isNull(value) || value.Value == "":
				w.errorf(value, path+"."+key.Value, "is empty; give %s", what)
			}
		default:
			unknown = true
			if mistakenSecretKey(key.Value) {
				w.errorf(key, path, "unknown key %q; a secret takes only file or env: %s", key.Value, want)
			} else {
				w.errorf(key, path, "a key other than file or env (not shown, in case it is the secret); a secret takes only file or env: %s", want)
			}
		}
	}
	switch {
	case sources > 1:
		w.errorf(n, path, "give file or env, not both")
	case sources == 0 && !unknown:
		w.errorf(n, path, "names no file and no variable; %s", want)
	}
}

// mistakenSecretKey reports whether a key of a secret mapping is shown in
// the message: a near miss of file or env, or a name people use for the
// secret's source. Any other key may be the secret itself.
func mistakenSecretKey(key string) bool {
	lower := strings.ToLower(key)
	switch lower {
	case "value", "password", "path", "secret", "filename", "file_name", "path_file", "env_var", "envvar", "variable", "var", "environment", "name", "key", "token":
		return true
	}
	return editDistance(lower, "file") <= 2 || editDistance(lower, "env") <= 1
}

// editDistance is the Levenshtein distance of two short strings.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// describe names what a node holds, for messages: a scalar by its value,
// a list or a mapping by its kind.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	}
	if n.ShortTag() == "!!str" {
		return strconv.Quote(n.Value)
	}
	return n.Value
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func lastKey(path string) string {
	if i := strings.LastIndexAny(path, ".]"); i >= 0 {
		return path[i+1:]
	}
	return path
}
