package lab

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy forwards TCP connections from a loopback address to a target, and
// cuts clients off as a network partition does: a cut connection (and
// every new one) is held, its bytes neither forwarded nor refused, so the
// client sees timeouts, not resets; when the cut ends, the connections it
// held are closed without forwarding what they buffered, as connections
// outlived by a partition are, and new ones are forwarded again.
type Proxy struct {
	Addr   string
	ln     net.Listener
	target string

	// cut is the process whose connections are cut: 0 none, -1 every one.
	cut    atomic.Int64
	closed atomic.Bool

	mu    sync.Mutex
	conns map[*proxyConn]struct{}
	wg    sync.WaitGroup
}

type proxyConn struct {
	client, server net.Conn
	// checked is the process last looked up as the client's owner, and
	// owned whether it was.
	checked atomic.Int64
	owned   atomic.Bool
	// held is set once the connection was cut: it is closed on Restore.
	held atomic.Bool
}

// CutAll is Cut's pid for every client.
const CutAll = -1

// StartProxy listens on addr (127.0.0.1:PORT; ":0" for a free port) and
// forwards to target until the test ends.
func StartProxy(t testing.TB, addr, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("lab: proxy on %s to %s: %v", addr, target, err)
	}
	p := &Proxy{Addr: ln.Addr().String(), ln: ln, target: target, conns: map[*proxyConn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// Cut cuts the connections of the process pid off, those open and those
// it opens (CutAll: every client's).
func (p *Proxy) Cut(pid int) { p.cut.Store(int64(pid)) }

// Restore ends the cut: the connections it held are closed, new ones are
// forwarded.
func (p *Proxy) Restore() {
	p.cut.Store(0)
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		if c.held.Load() {
			c.client.Close()
			c.server.Close()
		}
	}
}

func (p *Proxy) close() {
	p.closed.Store(true)
	p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.client.Close()
		c.server.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.DialTimeout("tcp", p.target, time.Second)
		if err != nil {
			client.Close()
			continue
		}
		c := &proxyConn{client: client, server: server}
		p.mu.Lock()
		p.conns[c] = struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go p.forward(c, server, client)
		go p.forward(c, client, server)
	}
}

// forward copies src to dst while the connection is not cut, and holds
// it while it is.
func (p *Proxy) forward(c *proxyConn, dst, src net.Conn) {
	defer p.wg.Done()
	defer func() {
		dst.Close()
		src.Close()
		p.mu.Lock()
		delete(p.conns, c)
		p.mu.Unlock()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		for p.isCut(c) && !p.closed.Load() {
			c.held.Store(true)
			time.Sleep(20 * time.Millisecond)
		}
		if c.held.Load() {
			return // Restore closes it; what it buffered is dropped
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *Proxy) isCut(c *proxyConn) bool {
	switch pid := p.cut.Load(); pid {
	case 0:
		return false
	case CutAll:
		return true
	default:
		// A connection's owner never changes: looked up once per process.
		if c.checked.Load() != pid {
			c.owned.Store(ownsSocket(pid, c.client.RemoteAddr(), c.client.LocalAddr()))
			c.checked.Store(pid)
		}
		return c.owned.Load()
	}
}

// ownsSocket reports whether the process pid holds the loopback TCP socket
// of a proxied connection: local address client (the client's end), remote
// address proxy. It is found by its inode in /proc/net/tcp, among pid's
// open files.
func ownsSocket(pid int64, client, proxy net.Addr) bool {
	inode := tcpInode(client, proxy)
	if inode == "" {
		return false
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return false
	}
	for _, fd := range fds {
		if link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && link == "socket:["+inode+"]" {
			return true
		}
	}
	return false
}

// tcpInode is the inode of the open IPv4 TCP socket from local to remote,
// "" when there is none. The whole pair is matched, and sockets without an
// inode skipped: a busy machine reuses a client port for another remote
// while the old connection is still listed in TIME_WAIT (inode 0), and a
// match on the local port alone found that one first, so a connection of
// the process being cut was forwarded as nobody's.
func tcpInode(local, remote net.Addr) string {
	l, lok := local.(*net.TCPAddr)
	r, rok := remote.(*net.TCPAddr)
	if !lok || !rok {
		return ""
	}
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return ""
	}
	defer f.Close()
	wantLocal, wantRemote := procTCPAddr(l), procTCPAddr(r)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 || fields[1] != wantLocal || fields[2] != wantRemote {
			continue
		}
		if inode, err := strconv.ParseUint(fields[9], 10, 64); err == nil && inode != 0 {
			return fields[9]
		}
	}
	return ""
}

// procTCPAddr writes an IPv4 address as /proc/net/tcp does: the address's
// four bytes as one little-endian word in hex, a colon, the port in hex.
func procTCPAddr(a *net.TCPAddr) string {
	ip := a.IP.To4()
	if ip == nil {
		return ""
	}
	return fmt.Sprintf("%02X%02X%02X%02X:%04X", ip[3], ip[2], ip[1], ip[0], a.Port)
}
