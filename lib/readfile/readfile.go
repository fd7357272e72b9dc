// Package readfile reads the files the exporter is told to read (its web
// config, TLS certificates and keys, CA bundles, secret files) with a
// bound on their size, so that a path such as /dev/zero, a FIFO or a huge
// file by mistake is refused by name instead of hanging a check while
// memory grows.
package readfile

import (
	"fmt"
	"io"
	"os"
)

// Limits for the kinds of file the exporter reads. A CA bundle of every
// public root is about 250 KiB; a secret is a line.
const (
	// ConfigLimit bounds the config file and the web config file.
	ConfigLimit = 1 << 20
	// PEMLimit bounds a certificate, a key or a CA bundle.
	PEMLimit = 4 << 20
	// SecretLimit bounds a password or token file.
	SecretLimit = 64 << 10
)

// Bounded reads the file at path, refusing it once it holds more than
// limit bytes. what names the file in errors ("ca_file", "--web.config.file").
// Only regular files are read: a device, FIFO or directory is refused
// before it is opened for reading, so nothing blocks on it.
func Bounded(what, path string, limit int64) ([]byte, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %s is not a regular file but %s", what, path, kind(info.Mode()))
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: read %s: %w", what, path, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: %s is larger than %s, the most this file may hold", what, path, Size(limit))
	}
	return b, nil
}

// kind names what a path that is not a regular file is.
func kind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return "a special file"
}

// Size prints a byte count as people write it: "1 MiB", "64 KiB".
func Size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
