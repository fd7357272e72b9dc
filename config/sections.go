package config

import (
	"cmp"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"
)

// A Section is one system's list of clusters in the config file: its key,
// what one entry is called in messages, and how an entry is completed.
// Complete, the strict decoder and the type hints walk the sections table,
// so a system's format is its settings package, which registers its
// section (Register).
type Section struct {
	// Key is the file's top-level key.
	Key string
	// Noun names one entry in messages.
	Noun string
	// Rank places the section in the table (SectionSpec.Rank).
	Rank int
	// typeNames are SectionSpec.TypeNames.
	typeNames map[string]string

	typ      reflect.Type                 // []C
	get      func(*Config) reflect.Value  // the entries, a []C
	set      func(*Config, reflect.Value) // replaces them
	complete func(*Config) func(i int) (name string, nameErr, err error)
	// modules is the section of this one's modules (SectionSpec.Modules),
	// nil without; at finds a module of a modules section (ModuleAt).
	modules *Section
	at      func(cfg *Config, module, name string, addrs []string) (any, bool)
}

// Type is the type of the section's list of entries, []C: what the file's
// key decodes into (the chart's schema is built from it).
func (s Section) Type() reflect.Type { return s.typ }

// SectionSpec describes a section of entries of type C.
type SectionSpec[C any] struct {
	Key, Noun string
	// Rank places the section in the table, whatever the order the
	// sections are registered in: the sections of a positive rank come
	// first, lowest first, then their modules sections in the same order,
	// then those of no rank (0, a test's), each with its modules section,
	// in the order registered. A section whose check reads another's
	// entries ranks after it, being completed after it.
	Rank int
	// TypeNames are the names the decoder's messages give the section's
	// types, by the names Go gives them ("settings.Cluster":
	// "config.KafkaCluster"): the names they had when the settings were
	// this package's, which the messages for an unknown key keep
	// ("line 3: field refresh_intervall not found in type
	// config.KafkaCluster"). Its modules section has the same.
	TypeNames map[string]string
	// Defaults fills in what an entry does not set, its name included.
	Defaults func(*C)
	// Name is an entry's name, unique within the section.
	Name func(*C) string
	// Validate returns the check of one entry of cfg. It is called once per
	// Complete, after the sections before this one are complete, so that a
	// check may read them (a mirror names clusters of the kafka list).
	Validate func(cfg *Config) func(*C) error
	// Modules, when set, gives the section a modules section (KEY_modules)
	// for /probe, and refuses allowed_targets and allow_any_target in the
	// section's own entries, where they mean nothing.
	Modules *ModuleSpec[C]
}

// NewSection turns a spec into a Section of the table (with its modules
// section, when the spec has Modules).
func NewSection[C any](spec SectionSpec[C]) Section {
	var modules *Section
	if m := spec.Modules; m != nil {
		ms := newModuleSection(spec, *m)
		modules = &ms
		validate := spec.Validate
		spec.Validate = func(cfg *Config) func(*C) error {
			check := validate(cfg)
			return func(c *C) error {
				t := m.Targets(c)
				return errors.Join(check(c), errModuleKeys(t.Allowed, t.AllowAny, moduleKey(spec.Key)))
			}
		}
	}
	// The entries live in the config's own table, read with Entries and
	// set with SetEntries.
	list := func(cfg *Config) *[]C {
		if cfg.entries == nil {
			cfg.entries = map[string]any{}
		}
		entries, _ := cfg.entries[spec.Key].(*[]C)
		if entries == nil {
			entries = new([]C)
			cfg.entries[spec.Key] = entries
		}
		return entries
	}
	return Section{
		Key:  spec.Key,
		Noun: spec.Noun,
		Rank: spec.Rank,

		typeNames: spec.TypeNames,
		modules:   modules,
		typ:       reflect.TypeOf([]C(nil)),
		get:       func(cfg *Config) reflect.Value { return reflect.ValueOf(*list(cfg)) },
		set:       func(cfg *Config, v reflect.Value) { *list(cfg) = v.Interface().([]C) },
		complete: func(cfg *Config) func(int) (string, error, error) {
			entries := *list(cfg)
			validate := spec.Validate(cfg)
			return func(i int) (string, error, error) {
				e := &entries[i]
				spec.Defaults(e)
				name := spec.Name(e)
				if err := checkName(name); err != nil {
					return name, err, nil
				}
				return name, nil, validate(e)
			}
		},
	}
}

// Entries are the entries of cfg's section key, nil when it has none: what
// a settings package's accessor reads.
func Entries[C any](cfg *Config, key string) []C {
	if entries, ok := cfg.entries[key].(*[]C); ok {
		return *entries
	}
	return nil
}

// SetEntries replaces the entries of cfg's section key, for configs built
// in code; Complete then completes them.
func SetEntries[C any](cfg *Config, key string, entries []C) {
	if cfg.entries == nil {
		cfg.entries = map[string]any{}
	}
	cfg.entries[key] = &entries
}

// withModules is the sections in order, then the modules sections of
// those that have them, in the same order.
func withModules(sections ...Section) []Section {
	out := append([]Section(nil), sections...)
	for _, s := range sections {
		if s.modules != nil {
			out = append(out, *s.modules)
		}
	}
	return out
}

// table is the table of the registered sections (SectionSpec.Rank): the
// ranked sections by rank and their modules sections, then the others,
// each with its modules section, in the order registered.
func table(registered []Section) []Section {
	var ranked, others []Section
	for _, s := range registered {
		if s.Rank > 0 {
			ranked = append(ranked, s)
		} else {
			others = append(others, s)
		}
	}
	slices.SortStableFunc(ranked, func(a, b Section) int { return cmp.Compare(a.Rank, b.Rank) })
	out := withModules(ranked...)
	for _, s := range others {
		out = append(out, withModules(s)...)
	}
	return out
}

var (
	sectionsMu sync.RWMutex
	// registered are the sections Register added, without their modules
	// sections; sections is their table, in the order the file's sections
	// are completed and their errors reported.
	registered, sections []Section
	// fileTypeCache is the type the file decodes into, built from the table.
	fileTypeCache reflect.Type
)

// Register adds a section to the table, at its rank: each system's
// settings package registers its own in its init, so that a program or
// test that imports the package reads the section's key. It is called
// before the first Parse; a key already in the table is refused.
func Register(s Section) error {
	sectionsMu.Lock()
	defer sectionsMu.Unlock()
	for _, add := range withModules(s) {
		for _, have := range sections {
			if have.Key == add.Key {
				return fmt.Errorf("config section %q is registered twice", add.Key)
			}
		}
	}
	registered = append(registered, s)
	sections = table(registered)
	fileTypeCache = nil
	return nil
}

// Sections are the table's sections, in order.
func Sections() []Section {
	sectionsMu.RLock()
	defer sectionsMu.RUnlock()
	return append([]Section(nil), sections...)
}

// FileType is the struct the file decodes into, one field per section of
// the table tagged with its key: what the chart's schema describes.
func FileType() reflect.Type { return fileType() }

// fileType is the struct the file decodes into: one field per section,
// tagged with its key, so that the strict decoder and the type walk know
// every section and refuse any other key.
func fileType() reflect.Type {
	sectionsMu.Lock()
	defer sectionsMu.Unlock()
	if fileTypeCache == nil {
		fields := make([]reflect.StructField, len(sections))
		for i, s := range sections {
			fields[i] = reflect.StructField{Name: fmt.Sprintf("Section%d", i), Type: s.typ, Tag: reflect.StructTag(`yaml:"` + s.Key + `"`)}
		}
		fileTypeCache = reflect.StructOf(fields)
	}
	return fileTypeCache
}

// fromFile stores the decoded file's sections in cfg.
func fromFile(cfg *Config, file reflect.Value) {
	for i, s := range Sections() {
		if v := file.Field(i); !v.IsNil() {
			s.set(cfg, v)
		}
	}
}

// fileTypeError names the file's type as config.Config in the decoder's
// messages ("field x not found in type config.Config"), whatever the
// sections, and each section's types by their TypeNames: b is the file.
func fileTypeError(err error, file reflect.Type, b []byte) error {
	if err == nil {
		return nil
	}
	msg := strings.ReplaceAll(err.Error(), file.String(), "config.Config")
	if unknownField.MatchString(msg) {
		at := sectionOfLine(b)
		msg = unknownField.ReplaceAllStringFunc(msg, func(m string) string {
			parts := unknownField.FindStringSubmatch(m)
			line, _ := strconv.Atoi(parts[2])
			if name, ok := at(line).typeNames[parts[3]]; ok {
				return parts[1] + name
			}
			return m
		})
	}
	if msg == err.Error() {
		return err
	}
	return errors.New(msg)
}

// unknownField is the decoder's message for an unknown key or a value of
// the wrong type: its line and the Go type it names.
var unknownField = regexp.MustCompile(`(?m)^(\s*line (\d+): (?:field \S+ not found in type|cannot unmarshal .* into) )(\S+)$`)

// sectionOfLine returns the section of the table whose top-level key the
// file's line is under (none outside them).
func sectionOfLine(b []byte) func(line int) Section {
	var doc yaml.Node
	_ = yaml.Unmarshal(b, &doc)
	type start struct {
		line int
		key  string
	}
	var starts []start
	if len(doc.Content) == 1 && doc.Content[0].Kind == yaml.MappingNode {
		root := doc.Content[0]
		for i := 0; i+1 < len(root.Content); i += 2 {
			starts = append(starts, start{root.Content[i].Line, root.Content[i].Value})
		}
	}
	table := Sections()
	return func(line int) Section {
		key := ""
		for _, s := range starts {
			if s.line <= line {
				key = s.key
			}
		}
		for _, s := range table {
			if s.Key == key {
				return s
			}
		}
		return Section{}
	}
}

// sectionKeys lists the keys for messages: "a, b and c".
func sectionKeys() string {
	var keys []string
	for _, s := range Sections() {
		keys = append(keys, s.Key)
	}
	if len(keys) < 2 {
		return strings.Join(keys, "")
	}
	return strings.Join(keys[:len(keys)-1], ", ") + " and " + keys[len(keys)-1]
}

// Complete applies defaults and validates, section by section of the
// table. It is called by Parse and must be called on configs built in code
// (for example from flags).
func (c *Config) Complete() error {
	var errs []error
	for _, s := range Sections() {
		n := s.get(c).Len()
		if n == 0 {
			continue
		}
		complete := s.complete(c)
		seen := map[string]bool{}
		for i := range n {
			name, nameErr, err := complete(i)
			switch {
			case nameErr != nil:
				errs = append(errs, fmt.Errorf("%s %d: %w", s.Noun, i+1, nameErr))
			case err != nil:
				errs = append(errs, fmt.Errorf("%s %d (%q): %w", s.Noun, i+1, name, err))
			}
			if seen[name] {
				errs = append(errs, fmt.Errorf("%s %q is defined twice", s.Noun, name))
			}
			seen[name] = true
		}
	}
	return errors.Join(errs...)
}
