package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"spatec.dev/spatec/exec/broker"
)

func addrs(cidrs ...string) func() ([]net.Addr, error) {
	return func() ([]net.Addr, error) {
		var out []net.Addr
		for _, c := range cidrs {
			ip, n, err := net.ParseCIDR(c)
			if err != nil {
				return nil, err
			}
			n.IP = ip
			out = append(out, n)
		}
		return out, nil
	}
}

func TestOwnAddressIsTheContainerNetworks(t *testing.T) {
	ip, err := ownAddress(addrs("127.0.0.1/8", "::1/128", "fe80::42:acff:fe12:2/64", "172.18.0.2/16"))
	if err != nil || ip.String() != "172.18.0.2" {
		t.Fatalf("ownAddress = %v, %v; want 172.18.0.2", ip, err)
	}
	if _, err := ownAddress(addrs("127.0.0.1/8", "::1/128")); err == nil || !strings.Contains(err.Error(), "no IPv4 address other than the loopback") {
		t.Fatalf("ownAddress with only the loopback: err = %v", err)
	}
}

// TestBrokerRunsUntilStopped starts the program on a free port, reaches
// it, and stops it as a container stop would.
func TestBrokerRunsUntilStopped(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	ctx, stop := context.WithCancel(context.Background())
	// The program says it is up once its own check has answered; stopped
	// before that, its check is what the stop cuts short.
	outR, outW := io.Pipe()
	var errOut bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"-partitions", "3", "-port", strconv.Itoa(port), "-advertise", "127.0.0.1:" + strconv.Itoa(port)}, addrs(), outW, &errOut)
		outW.Close()
	}()
	up := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(outR).ReadString('\n')
		up <- line
		_, _ = io.Copy(io.Discard, outR)
	}()
	c, err := broker.NewClient([]string{"127.0.0.1:" + strconv.Itoa(port)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for c.Ping(pctx) != nil && pctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
	}
	if err := c.EnsureTopic(pctx, "t", 3); err != nil {
		t.Fatal(err)
	}
	line := <-up
	stop()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if want := "3 partitions a topic, advertising 127.0.0.1:" + strconv.Itoa(port); !strings.Contains(line, want) {
		t.Errorf("output %q lacks %q", line, want)
	}
}

func TestVersionAndBadFlags(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"-version"}, addrs(), &out, &errOut); code != 0 || out.String() != "spatec-broker "+version+"\n" {
		t.Errorf("-version: exit %d, %q", code, out.String())
	}
	if code := run(context.Background(), []string{"-partitions"}, addrs(), &out, &errOut); code != 2 {
		t.Errorf("a flag without its value: exit %d, want 2", code)
	}
}
