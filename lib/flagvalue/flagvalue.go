// Package flagvalue holds the command line's flag values whose errors name
// their flag and the form they want (kingpin's own say only "time: missing
// unit" or "strconv.ParseFloat"), for the server's flags and those the
// systems declare (system.Spec.Flags).
package flagvalue

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Duration is a duration flag.
type Duration struct {
	Flag string
	Dst  *time.Duration
}

// Set parses s, refusing a number without a unit by name.
func (v *Duration) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err == nil {
		*v.Dst = d
		return nil
	}
	if _, numErr := strconv.ParseFloat(s, 64); numErr == nil {
		return fmt.Errorf("%s %q has no unit; write a duration such as %ss or %sms", v.Flag, s, s, s)
	}
	return fmt.Errorf("%s %q is not a duration; write one such as 5s, 500ms or 2m", v.Flag, s)
}

func (v *Duration) String() string {
	if v.Dst == nil {
		return ""
	}
	return v.Dst.String()
}

// Enum is kingpin's enum flag with the flag's name in its error.
type Enum struct {
	Flag    string
	Dst     *string
	Options []string
}

// Set accepts one of the options.
func (v *Enum) Set(s string) error {
	if !slices.Contains(v.Options, s) {
		// The words are kingpin's, which scripts may match on.
		return fmt.Errorf("%s: enum value must be one of %s, got '%s'", v.Flag, strings.Join(v.Options, ","), s)
	}
	*v.Dst = s
	return nil
}

func (v *Enum) String() string {
	if v.Dst == nil {
		return ""
	}
	return *v.Dst
}

// Count is a flag that counts something: a whole number, never 1.5 read
// as 1 or an overflow read as a negative number.
type Count struct {
	Flag string
	Dst  *int
	// Min and Max bound the number in messages; the caller checks them.
	Min, Max int
}

// Set parses a whole number.
func (v *Count) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 0)
	if err != nil {
		var numErr *strconv.NumError
		if errors.As(err, &numErr) && errors.Is(numErr.Err, strconv.ErrRange) {
			return fmt.Errorf("%s %s is out of range; give a whole number from %d to %d", v.Flag, s, v.Min, v.Max)
		}
		return fmt.Errorf("%s %q is not a whole number; give one from %d to %d", v.Flag, s, v.Min, v.Max)
	}
	*v.Dst = int(n)
	return nil
}

func (v *Count) String() string {
	if v.Dst == nil {
		return ""
	}
	return strconv.Itoa(*v.Dst)
}

// SplitList reads a repeatable flag whose values may also be
// comma-separated: "a:1,b:1" and two flags are the same list.
func SplitList(values []string) []string {
	var out []string
	for _, v := range values {
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}
