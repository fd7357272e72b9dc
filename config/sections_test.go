package config

import (
	"slices"
	"strings"
	"testing"
)

// The sections table is the one truth about the file's sections: the
// file's type has a field for every section, so the decoder and the type
// walk know them all, and a section's entries, set in code, are completed
// by Complete.
func TestSectionsAreFileFields(t *testing.T) {
	file := yamlFields(fileType())
	for _, s := range Sections() {
		if f, ok := file[s.Key]; !ok || f.Type != s.typ {
			t.Errorf("section %s: the file's type has no field %s of type %s", s.Key, s.Key, s.typ)
		}
	}
	if len(file) != len(Sections()) {
		t.Errorf("the file's type has %d fields, the table %d sections", len(file), len(Sections()))
	}
	cfg := &Config{}
	SetEntries(cfg, "test", []testSettings{{Addrs: []string{"127.0.0.1:9092"}}})
	if err := cfg.Complete(); err != nil {
		t.Fatal(err)
	}
	if got := Entries[testSettings](cfg, "test"); got[0].Name != "test" {
		t.Errorf("Complete left the test section's defaults out: %+v", got[0])
	}
}

// The table's order is the sections' ranks, whatever the order they are
// registered in (Go initializes the systems' settings packages by import
// path): ranked sections first, then their modules sections, then the
// unranked ones, each with its modules section, in the order registered.
func TestTableFollowsRanks(t *testing.T) {
	section := func(key string, rank int, modules bool) Section {
		spec := SectionSpec[testSettings]{Key: key, Noun: key + " cluster", Rank: rank}
		if modules {
			spec.Modules = testModules
		}
		return NewSection(spec)
	}
	a, b, c := section("a", 1, true), section("b", 2, true), section("c", 3, false)
	late, later := section("late", 0, true), section("later", 0, false)
	want := "a, b, c, a_modules, b_modules, late, late_modules, later"
	for _, order := range [][]Section{{a, b, c, late, later}, {a, c, b, late, later}, {late, c, later, b, a}} {
		var keys []string
		for _, s := range table(order) {
			keys = append(keys, s.Key)
		}
		if got := strings.Join(keys, ", "); got != want {
			t.Errorf("registered %v: table %s, want %s", keyList(order), got, want)
		}
	}
	if err := Register(testSection); err == nil || !strings.Contains(err.Error(), `config section "test" is registered twice`) {
		t.Errorf("a second registration of test: %v", err)
	}
	if !slices.ContainsFunc(Sections(), func(s Section) bool { return s.Key == "test_modules" }) {
		t.Error("the test section's modules are not in the table")
	}
}

func keyList(sections []Section) []string {
	var keys []string
	for _, s := range sections {
		keys = append(keys, s.Key)
	}
	return keys
}
