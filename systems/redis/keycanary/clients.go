package keycanary

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/redis/rueidis"
)

// Clients are a canary's connections, one per process, all with the same
// options, dialled on first use and kept until dropped or closed. The
// engine holds the data nodes'; the Sentinel canary the sentinels' too.
// It is safe for concurrent use.
type Clients struct {
	option rueidis.ClientOption

	mu      sync.Mutex
	clients map[string]rueidis.Client
	closed  bool
}

// NewClients returns the connections of option (its InitAddress is set
// per process).
func NewClients(option rueidis.ClientOption) *Clients {
	return &Clients{option: option, clients: map[string]rueidis.Client{}}
}

// Get returns the connection to addr, dialled the first time. The dial
// happens outside the lock, so that a hung process does not hold up the
// others.
func (cs *Clients) Get(addr string) (rueidis.Client, error) {
	if addr == "" {
		return nil, errors.New("no address")
	}
	cs.mu.Lock()
	c, ok := cs.clients[addr]
	closed := cs.closed
	cs.mu.Unlock()
	if closed {
		return nil, errors.New("canary stopped")
	}
	if ok {
		return c, nil
	}
	option := cs.option
	option.InitAddress = []string{addr}
	// With ForceSingleClient rueidis returns a usable client even when the
	// first dial fails; it dials again on the next command.
	c, err := rueidis.NewClient(option)
	if c == nil {
		return nil, fmt.Errorf("connect %s: %w", addr, err)
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.closed {
		c.Close()
		return nil, errors.New("canary stopped")
	}
	if existing, ok := cs.clients[addr]; ok {
		c.Close() // another caller dialled it first
		return existing, nil
	}
	cs.clients[addr] = c
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", addr, err)
	}
	return c, nil
}

// DropExcept closes the connections to addresses not in keep: processes
// that left the topology (a pod's IP changes on every restart).
func (cs *Clients) DropExcept(keep []string) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for addr, c := range cs.clients {
		if !slices.Contains(keep, addr) {
			delete(cs.clients, addr)
			c.Close()
		}
	}
}

// Close closes every connection; Get fails afterwards.
func (cs *Clients) Close() {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.closed = true
	for addr, c := range cs.clients {
		c.Close()
		delete(cs.clients, addr)
	}
}

// addrs are the addresses connected, for tests.
func (cs *Clients) addrs() []string {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	var out []string
	for addr := range cs.clients {
		out = append(out, addr)
	}
	slices.Sort(out)
	return out
}
