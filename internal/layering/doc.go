// Package layering holds the test that keeps clients apart from systems:
// no system package (a package under systems/ with a system.go, one
// registry line each) imports a sibling system, and neither config nor the
// systems' settings packages (systems/*/settings) link a client library.
// The clients live in systems/kafka/client and systems/redis/proto, which
// systems and canaries import; the Redis canaries' engine, which writes and
// checks the keys for Redis Cluster's canary and Sentinel's alike, is such
// a library too (systems/redis/keycanary).
package layering
