// Package config loads the exporter's configuration file: the strict
// decoder, the table of sections each system registers (its settings live
// in the system's own settings package), the checks and types they share,
// modules and fingerprints. It holds no
// state: on a reload, main loads a new Config and hands it to
// collector.Manager.Apply, which restarts the clusters whose fingerprint
// changed.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/failover-exporter/failover_exporter/lib/readfile"
)

// Defaults applied to every cluster that does not set its own.
const (
	DefaultRefreshInterval       = 5 * time.Second
	DefaultDialTimeout           = 3 * time.Second
	defaultRefreshTimeoutPercent = 80
	// DefaultBackdateLimit is above Redis's default cluster-node-timeout
	// (15 s) and Kafka's broker.session.timeout.ms (9 s) plus a few
	// refreshes: the longest a cluster usually takes to confirm a failure.
	DefaultBackdateLimit = time.Minute
	// MaxBackdateLimit keeps a node the exporter cannot reach for an hour
	// from lending that hour to a later real failure.
	MaxBackdateLimit = time.Hour
)

// Config is the whole configuration file: each section's entries, which
// the package that defines the section reads (Entries).
type Config struct {
	// entries are the sections' entries, by key: each a *[]C of its
	// SectionSpec.
	entries map[string]any
}

// Enum is a setting's type whose values are a fixed list: Values are the
// YAML values the file may give it, for the chart's values.schema.json.
type Enum interface {
	Values() []any
}

// TLS configures a client TLS connection.
type TLS struct {
	Enabled            bool   `yaml:"enabled"`
	CAFile             string `yaml:"ca_file"`
	CertFile           string `yaml:"cert_file"`
	KeyFile            string `yaml:"key_file"`
	ServerName         string `yaml:"server_name"`
	InsecureSkipVerify bool   `yaml:"insecure_skip_verify"`
}

// Secret is read from a file or an environment variable, never written in
// the configuration file itself, so it cannot leak through the file, the
// command line or a config dump.
type Secret struct {
	File string `yaml:"file"`
	Env  string `yaml:"env"`
}

// UnmarshalYAML accepts only {file: PATH} or {env: VARIABLE}: one of the
// two, not empty, and no other key (Node.Decode does not inherit the
// file's KnownFields, so {flie: PATH} would otherwise be no password at
// all). An inline value is refused without echoing it, so that a password
// typed into the file does not end up in an error message or a log.
// Parse's checkTypes refuses the same with the key path first.
func (s *Secret) UnmarshalYAML(value *yaml.Node) error {
	const want = "use {file: PATH} or {env: VARIABLE}"
	if value.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: secrets are not accepted inline; %s", value.Line, want)
	}
	var got Secret
	for i := 0; i+1 < len(value.Content); i += 2 {
		key, v := value.Content[i], value.Content[i+1]
		var dst *string
		switch key.Value {
		case "file":
			dst = &got.File
		case "env":
			dst = &got.Env
		default:
			return fmt.Errorf("line %d: a secret takes only the key file or env; %s", key.Line, want)
		}
		if err := v.Decode(dst); err != nil || *dst == "" {
			return fmt.Errorf("line %d: secret %s must be a non-empty name; %s", v.Line, key.Value, want)
		}
	}
	switch {
	case got.File != "" && got.Env != "":
		return fmt.Errorf("line %d: a secret takes file or env, not both", value.Line)
	case !got.IsSet():
		return fmt.Errorf("line %d: the secret names no file and no variable; %s", value.Line, want)
	}
	*s = got
	return nil
}

// IsSet reports whether a source for the secret is configured.
func (s Secret) IsSet() bool { return s.File != "" || s.Env != "" }

// Value reads the secret. Trailing newlines in files are trimmed.
func (s Secret) Value() (string, error) {
	switch {
	case s.File != "":
		b, err := readfile.Bounded("secret file", s.File, readfile.SecretLimit)
		if err != nil {
			return "", err
		}
		return strings.TrimRight(string(b), "\r\n"), nil
	case s.Env != "":
		v, ok := os.LookupEnv(s.Env)
		if !ok {
			return "", fmt.Errorf("secret environment variable %s is not set", s.Env)
		}
		return v, nil
	}
	return "", nil
}

// String never prints the secret itself.
func (s Secret) String() string {
	switch {
	case s.File != "":
		return "file:" + s.File
	case s.Env != "":
		return "env:" + s.Env
	}
	return ""
}

// Regexp is a regular expression anchored at both ends, as in Prometheus.
type Regexp struct {
	*regexp.Regexp
	original string
}

// NewRegexp compiles an anchored regular expression.
func NewRegexp(s string) (*Regexp, error) {
	re, err := regexp.Compile("^(?:" + s + ")$")
	if err != nil {
		return nil, err
	}
	return &Regexp{Regexp: re, original: s}, nil
}

// UnmarshalYAML compiles the expression at load time.
func (r *Regexp) UnmarshalYAML(value *yaml.Node) error {
	var s string
	if err := value.Decode(&s); err != nil {
		return err
	}
	re, err := NewRegexp(s)
	if err != nil {
		return fmt.Errorf("line %d: invalid regular expression %q: %w", value.Line, s, err)
	}
	*r = *re
	return nil
}

// MarshalText returns the expression as written, so that configs compare
// and print by their text.
func (r *Regexp) MarshalText() ([]byte, error) { return []byte(r.original), nil }

// String returns the expression as written.
func (r *Regexp) String() string { return r.original }

// Load reads and validates a configuration file of at most MaxConfigSize
// bytes.
func Load(path string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read config file: %w", err)
	}
	defer f.Close()
	// Read one byte past the limit, never the whole of a huge file.
	b, err := io.ReadAll(io.LimitReader(f, MaxConfigSize+1))
	if err != nil {
		return nil, fmt.Errorf("read config file %s: %w", path, err)
	}
	if len(b) > MaxConfigSize {
		return nil, fmt.Errorf("config file %s is larger than %d KiB; a config file listing clusters is a few KiB", path, MaxConfigSize>>10)
	}
	cfg, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	return cfg, nil
}

// Parse decodes a configuration strictly (unknown keys are errors), applies
// defaults and validates the result.
func Parse(b []byte) (*Config, error) {
	if err := checkUTF8(b); err != nil {
		return nil, err
	}
	// Types first, by key path: the typed decoder stops at the first bad
	// value, with a message that names neither the key nor what to write,
	// and takes an explicit 0s for the default.
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err == nil {
		if err := checkTypes(&doc); err != nil {
			return nil, err
		}
	}
	cfg := &Config{}
	if err := decodeStrict(b, cfg); err != nil {
		return nil, err
	}
	if err := cfg.Complete(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// decodeStrict decodes the file's one document into cfg, refusing unknown
// keys; a trailing "---" starts an empty document, which is no second
// config. A panic of the YAML decoder on input checkTypes let through is
// an error about the file, not a crash of the check or the reload.
func decodeStrict(b []byte, cfg *Config) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the YAML decoder failed on this file (%v); check its anchors, aliases and merge keys", r)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	file := reflect.New(fileType())
	if err := dec.Decode(file.Interface()); err != nil && !errors.Is(err, io.EOF) {
		return fileTypeError(err, file.Elem().Type(), b)
	}
	fromFile(cfg, file.Elem())
	for {
		var extra yaml.Node
		err := dec.Decode(&extra)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil || len(extra.Content) != 1 || !isNull(extra.Content[0]) {
			return fmt.Errorf("line %d: more than one YAML document; put all clusters in one", extra.Line)
		}
	}
}

// DefaultTimings fills in an entry's refresh_interval and refresh_timeout
// when it sets neither: the defaults every section shares.
func DefaultTimings(interval, timeout *time.Duration) {
	if *interval == 0 {
		*interval = DefaultRefreshInterval
	}
	if *timeout == 0 {
		*timeout = RefreshTimeoutFor(*interval)
	}
}

// RefreshTimeoutFor is the default refresh_timeout, or 0 (reported by
// validation as the interval's problem, not the timeout's) when the
// interval is out of bounds.
func RefreshTimeoutFor(interval time.Duration) time.Duration {
	if CheckRefreshInterval("", interval) != nil {
		return 0
	}
	return interval * defaultRefreshTimeoutPercent / 100
}

// CheckBackdateLimit refuses a limit that would backdate nothing or
// lend an exporter-side outage of hours to a later failure.
func CheckBackdateLimit(limit time.Duration) error {
	if limit <= 0 || limit > MaxBackdateLimit {
		return fmt.Errorf("backdate_limit %s must be positive and at most %s", limit, MaxBackdateLimit)
	}
	return nil
}

// ValidateTimings returns one message per bad setting; a refresh_timeout
// that was derived from a bad interval is the interval's problem only.
func ValidateTimings(interval, timeout, dial, request time.Duration, requestKey string) []error {
	var errs []error
	intervalErr := CheckRefreshInterval("refresh_interval", interval)
	if intervalErr != nil {
		errs = append(errs, intervalErr)
	}
	switch {
	case timeout == 0 && intervalErr != nil:
	case timeout <= 0:
		errs = append(errs, fmt.Errorf("refresh_timeout %s must be positive", timeout))
	case intervalErr == nil && timeout > interval:
		errs = append(errs, fmt.Errorf("refresh_timeout %s must be positive and at most refresh_interval %s", timeout, interval))
	}
	if dial <= 0 {
		errs = append(errs, fmt.Errorf("dial_timeout %s must be positive", dial))
	}
	if request <= 0 {
		errs = append(errs, fmt.Errorf("%s %s must be positive", requestKey, request))
	}
	return errs
}

// Validate checks the TLS settings, reading the files they name.
func (t TLS) Validate() error {
	if !t.Enabled {
		if t.CAFile != "" || t.CertFile != "" || t.KeyFile != "" || t.ServerName != "" || t.InsecureSkipVerify {
			return errors.New("tls settings given but tls.enabled is false")
		}
		return nil
	}
	if (t.CertFile == "") != (t.KeyFile == "") {
		return errors.New("tls.cert_file and tls.key_file must be set together")
	}
	// Read and parse the files, so that --config.check and a reload refuse
	// what the clusters would fail on when they start.
	if _, err := t.ClientConfig(); err != nil {
		return fmt.Errorf("tls: %w", err)
	}
	return nil
}

// Validate checks that the secret names one source and can be read;
// field names it in the message.
func (s Secret) Validate(field string) error {
	if s.File != "" && s.Env != "" {
		return fmt.Errorf("%s: set either file or env, not both", field)
	}
	if !s.IsSet() {
		return fmt.Errorf("%s: set file or env", field)
	}
	if _, err := s.Value(); err != nil {
		return fmt.Errorf("%s: %w", field, err)
	}
	return nil
}
