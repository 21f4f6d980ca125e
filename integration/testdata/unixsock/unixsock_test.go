// Package unixsock is what many real test suites do: a server and a client
// on pathname UNIX sockets in t.TempDir(). integration/parity_test.go runs
// it bare and under wrun --grant verify.
package unixsock

import (
	"bufio"
	"net"
	"path/filepath"
	"testing"
)

func TestStreamEcho(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		line, _ := bufio.NewReader(c).ReadString('\n')
		c.Write([]byte("echo " + line))
	}()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("hello\n")); err != nil {
		t.Fatalf("write: %v", err)
	}
	got, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || got != "echo hello\n" {
		t.Fatalf("read %q, %v; want %q", got, err, "echo hello\n")
	}
}

func TestDatagram(t *testing.T) {
	dir := t.TempDir()
	srv, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: filepath.Join(dir, "srv.sock"), Net: "unixgram"})
	if err != nil {
		t.Fatalf("listen unixgram: %v", err)
	}
	defer srv.Close()
	cli, err := net.DialUnix("unixgram", &net.UnixAddr{Name: filepath.Join(dir, "cli.sock"), Net: "unixgram"}, srv.LocalAddr().(*net.UnixAddr))
	if err != nil {
		t.Fatalf("dial unixgram: %v", err)
	}
	defer cli.Close()
	if _, err := cli.Write([]byte("ping")); err != nil {
		t.Fatalf("send: %v", err)
	}
	buf := make([]byte, 16)
	n, from, err := srv.ReadFromUnix(buf)
	if err != nil || string(buf[:n]) != "ping" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	if _, err := srv.WriteToUnix([]byte("pong"), from); err != nil {
		t.Fatalf("reply: %v", err)
	}
	if n, err := cli.Read(buf); err != nil || string(buf[:n]) != "pong" {
		t.Fatalf("reply read %q, %v", buf[:n], err)
	}
}
