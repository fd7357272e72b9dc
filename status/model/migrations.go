package model

// SlotMove is an atomic slot migration job in flight (Valkey 9.0+, Redis
// 8.4+): the slot map marks its slots, a table lists it.
type SlotMove struct {
	// Name is the server's name (Valkey) or id (Redis) of the job.
	Name string
	// Ranges are its slot ranges as the servers write them ("0-3000 5000");
	// Slots counts them.
	Ranges string
	Slots  int
	// Source and Target are the nodes' addresses, or short IDs of nodes
	// the snapshot does not know.
	Source, Target string
	// State is the server's word for where the job is ("snapshotting").
	State string
	// Age is how long ago the job was created ("3s"); empty when the
	// server does not say.
	Age string
	// Remaining is the replication stream the source still has to send
	// ("1.2 MiB"); empty where the server does not say (Redis).
	Remaining string
	// Bands place its slot ranges on the slot map.
	Bands []MoveBand
}

// MoveBand is one slot range of a move, placed on the slot map.
type MoveBand struct {
	First, Last int
	// Left and Percent are its offset and width, as shares of the strip.
	Left, Percent string
}
