package config

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestSecretUnmarshalIsStrict: the Secret type refuses the same when
// decoded on its own, without Parse's walk first.
func TestSecretUnmarshalIsStrict(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"{flie: /x}", "a secret takes only the key file or env"},
		{"{}", "the secret names no file and no variable"},
		{"{file: ''}", "secret file must be a non-empty name"},
		{"{file: /x, env: Y}", "not both"},
		{"{file: /x, password: hunter2}", "a secret takes only the key file or env"},
		{"hunter2", "secrets are not accepted inline"},
	} {
		var s Secret
		err := yaml.Unmarshal([]byte(c.yaml), &s)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: %v, want %q and no secret", c.yaml, err, c.want)
		}
	}
	var s Secret
	if err := yaml.Unmarshal([]byte("{file: /etc/pw}"), &s); err != nil || s != (Secret{File: "/etc/pw"}) {
		t.Errorf("{file: /etc/pw}: %+v, %v", s, err)
	}
}

func TestRedactURL(t *testing.T) {
	for raw, want := range map[string]string{
		"http://h:8083/?token=s3cret#frag": "http://h:8083/",
		"http://u:s3cret@h:8083/x":         "http://h:8083/x",
		"http://h:8083":                    "http://h:8083",
		"u:s3cret@h:80%zz?token=s3cret":    "h:80%zz",
		"http://u:s3cret@h:80%zz":          "http://h:80%zz",
	} {
		if got := RedactURL(raw); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", raw, got, want)
		}
	}
}
