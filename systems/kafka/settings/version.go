package settings

import (
	"fmt"
	"strconv"
	"strings"
)

// Version is a Kafka protocol version as sarama numbers it: major,
// minor, very minor and patch, the last used only before 1.0 (0.11.0.2).
// The settings check versions without linking sarama; systems/kafka/client's
// tests hold ParseVersion to sarama.ParseKafkaVersion, which builds
// the client from the same string.
type Version [4]uint

// ParseVersion reads v as sarama.ParseKafkaVersion does: "0.a.b.c"
// before 1.0, "a.b.c" from 1.0 on, ASCII digits only.
func ParseVersion(v string) (Version, bool) {
	parts := strings.Split(v, ".")
	var version Version
	fields := version[:3]
	if strings.HasPrefix(v, "0") {
		if len(parts) != 4 || parts[0] != "0" {
			return Version{}, false
		}
		parts, fields = parts[1:], version[1:]
	}
	if len(parts) != 3 {
		return Version{}, false
	}
	for i, part := range parts {
		if part == "" || strings.Trim(part, "0123456789") != "" {
			return Version{}, false
		}
		n, err := strconv.ParseUint(part, 10, strconv.IntSize)
		if err != nil {
			return Version{}, false
		}
		fields[i] = uint(n)
	}
	return version, true
}

// IsAtLeast reports whether v is other or later.
func (v Version) IsAtLeast(other Version) bool {
	for i := range v {
		if v[i] != other[i] {
			return v[i] > other[i]
		}
	}
	return true
}

func (v Version) String() string {
	if v[0] == 0 {
		return fmt.Sprintf("0.%d.%d.%d", v[1], v[2], v[3])
	}
	return fmt.Sprintf("%d.%d.%d", v[0], v[1], v[2])
}
