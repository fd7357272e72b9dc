package sentinel

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/redis/rueidis"
)

// errBusy is returned for a process whose previous query has not
// finished: skipping it, rather than starting another, keeps a hung
// sentinel or node from piling up goroutines and connections.
var errBusy = errors.New("previous query still in flight")

// errClosed is returned once the pool is closed.
var errClosed = errors.New("source closed")

// pool holds one connection per process (a sentinel or a data node),
// kept across refreshes, all with the same options.
type pool struct {
	option rueidis.ClientOption

	mu     sync.Mutex
	conns  map[string]*conn
	closed bool
}

// conn is the connection to one process, dialled on first use.
type conn struct {
	busy   atomic.Bool
	mu     sync.Mutex
	client rueidis.Client
}

func newPool(option rueidis.ClientOption) *pool {
	return &pool{option: option, conns: map[string]*conn{}}
}

// do sends the commands build makes to the process at addr, pipelined in
// one round trip, and returns their replies; it fails at once when the
// previous query to addr is still in flight.
func (p *pool) do(ctx context.Context, addr string, build func(rueidis.Builder) rueidis.Commands) ([]rueidis.RedisResult, error) {
	c, err := p.conn(addr)
	if err != nil {
		return nil, err
	}
	if !c.busy.CompareAndSwap(false, true) {
		return nil, errBusy
	}
	defer c.busy.Store(false)
	client, err := p.dial(addr, c)
	if err != nil {
		return nil, err
	}
	return client.DoMulti(ctx, build(client.B())...), nil
}

// conn is addr's entry, made on first use.
func (p *pool) conn(addr string) (*conn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errClosed
	}
	c, ok := p.conns[addr]
	if !ok {
		c = &conn{}
		p.conns[addr] = c
	}
	return c, nil
}

// dial returns c's client, dialling addr the first time; the dial is
// bounded by the option's dialer timeout. With ForceSingleClient rueidis
// returns a client even when the first dial fails, and dials again on the
// next command.
func (p *pool) dial(addr string, c *conn) (rueidis.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.client != nil {
		return c.client, nil
	}
	option := p.option
	option.InitAddress = []string{addr}
	client, err := rueidis.NewClient(option)
	if client == nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	p.mu.Lock()
	dropped := p.closed || p.conns[addr] != c
	p.mu.Unlock()
	if dropped {
		client.Close()
		return nil, errClosed
	}
	c.client = client
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	return client, nil
}

// keep closes the connections to every address but keep's.
func (p *pool) keep(keep []string) {
	p.drop(func(addr string) bool { return !slices.Contains(keep, addr) }, false)
}

// close closes every connection; the pool cannot be used afterwards.
func (p *pool) close() { p.drop(func(string) bool { return true }, true) }

// drop forgets the connections whose address is chosen and closes them
// once p.mu is released (dial takes a conn's lock, then p.mu).
func (p *pool) drop(chosen func(addr string) bool, closing bool) {
	var dropped []*conn
	p.mu.Lock()
	p.closed = p.closed || closing
	for addr, c := range p.conns {
		if chosen(addr) {
			delete(p.conns, addr)
			dropped = append(dropped, c)
		}
	}
	p.mu.Unlock()
	for _, c := range dropped {
		c.close()
	}
}

func (c *conn) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.client != nil {
		c.client.Close()
		c.client = nil
	}
}
