// Package layering holds the test that keeps clients apart from systems:
// no system package (a collector package with a system.go, one registry
// line each) imports a sibling system, and config links no client library.
// The clients live in internal/kafkaclient and internal/redisproto, which
// systems and canaries import.
package layering
