// Package layering holds the test that keeps clients apart from systems:
// no system package (a package under systems/ with a system.go, one
// registry line each) imports a sibling system, and config links no client library.
// The clients live in systems/kafka/client and systems/redis/proto, which
// systems and canaries import.
package layering
