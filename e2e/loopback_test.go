package e2e

import (
	"net"
	"sync"
	"testing"
)

// loopbackServer accepts TCP connections on a free 127.0.0.1 port and runs
// handle for each in a goroutine of its own: the proxies and fake servers
// the fault tests put between the exporter and a cluster. Close, also run
// at cleanup, stops accepting, closes every connection it tracks (each
// accepted one, and those handle passes to Track) and waits for the
// handlers, so that no test leaves a goroutine or a socket behind.
type loopbackServer struct {
	Addr     string
	listener net.Listener
	handlers sync.WaitGroup

	mu       sync.Mutex
	conns    []net.Conn
	accepted int
	closed   bool
}

func startLoopbackServer(t *testing.T, handle func(s *loopbackServer, client net.Conn)) *loopbackServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen on 127.0.0.1: %v", err)
	}
	s := &loopbackServer{Addr: l.Addr().String(), listener: l}
	s.handlers.Add(1)
	go func() {
		defer s.handlers.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			if !s.Track(c) {
				return
			}
			s.mu.Lock()
			s.accepted++
			s.mu.Unlock()
			s.Go(func() { handle(s, c) })
		}
	}()
	t.Cleanup(s.Close)
	return s
}

// Port is the port the server listens on.
func (s *loopbackServer) Port() int { return s.listener.Addr().(*net.TCPAddr).Port }

// Track has Close close c too. After Close it closes c at once and
// returns false.
func (s *loopbackServer) Track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		c.Close()
		return false
	}
	s.conns = append(s.conns, c)
	return true
}

// Go runs f in a goroutine that Close waits for.
func (s *loopbackServer) Go(f func()) {
	s.handlers.Add(1)
	go func() {
		defer s.handlers.Done()
		f()
	}()
}

// Accepted is how many connections the server accepted.
func (s *loopbackServer) Accepted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.accepted
}

// Close stops the server; a second call does nothing.
func (s *loopbackServer) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.listener.Close()
	for _, c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.handlers.Wait()
}
