package lab

import (
	"bufio"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// echoServer echoes every line back until the test ends.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

// echoes reports whether a line sent on c comes back within wait.
func echoes(t *testing.T, c net.Conn, wait time.Duration) bool {
	t.Helper()
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return false
	}
	_ = c.SetReadDeadline(time.Now().Add(wait))
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && line == "ping\n"
}

// A cut of another process leaves this one's connection alone; a cut of
// this process (found by its socket in /proc) holds it, without a reset;
// Restore closes the held connection and forwards new ones.
func TestProxyCutsOneProcess(t *testing.T) {
	p := StartProxy(t, "127.0.0.1:0", echoServer(t))
	c, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !echoes(t, c, 5*time.Second) {
		t.Fatal("no echo through the proxy")
	}
	p.Cut(1) // init: not us
	if !echoes(t, c, 5*time.Second) {
		t.Fatal("a cut of another process cut this one")
	}
	p.Cut(os.Getpid())
	if echoes(t, c, 300*time.Millisecond) {
		t.Fatal("this process's connection still forwarded while cut")
	}
	fresh, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if echoes(t, fresh, 300*time.Millisecond) {
		t.Fatal("a new connection of this process forwarded while cut")
	}
	p.Restore()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Error("a held connection stays open after Restore")
	}
	again, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if !echoes(t, again, 5*time.Second) {
		t.Error("no echo on a new connection after Restore")
	}
	p.Cut(CutAll)
	if echoes(t, again, 300*time.Millisecond) {
		t.Error("CutAll left a connection forwarded")
	}
}
