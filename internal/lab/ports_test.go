package lab

import "testing"

// TestPortReservation: a block that overlaps a reserved one is refused
// until the first is released. This is what keeps the demo test's Kafka
// block (base+100) off its own Redis cluster bus (base+10000), and the two
// lanes of make test off each other's clusters.
func TestPortReservation(t *testing.T) {
	base := PickBasePort(t, 0, 100)
	if locks, ok := reservePorts(t, base, []int{0}); ok {
		releasePorts(locks)
		t.Fatalf("port %d was reserved twice", base)
	}
	if locks, ok := reservePorts(t, base+97, []int{0, 1, 2, 3}); ok {
		releasePorts(locks)
		t.Fatalf("block %d..%d overlaps reserved port %d and was reserved", base+97, base+100, base+100)
	}
	locks, ok := reservePorts(t, base+1, []int{0, 1})
	if !ok {
		t.Fatalf("block %d..%d does not overlap %d or %d and was refused", base+1, base+2, base, base+100)
	}
	releasePorts(locks)
	again, ok := reservePorts(t, base+1, []int{0, 1})
	if !ok {
		t.Fatalf("block %d..%d was refused after its release", base+1, base+2)
	}
	releasePorts(again)
}
