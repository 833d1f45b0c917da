// Command spatec-broker runs a Kafka-protocol broker (franz-go's kfake) as
// a program of its own, so that an environment can run its broker in a
// container, under caps, on the run's network, exactly as the bench hosts
// run Redpanda: started, read back (C6) and waited for like any other
// infrastructure container.
//
// It listens on every interface at -port and advertises the container's
// own address on its network. A Kafka client connects to the advertised
// address after bootstrapping, and that one address is reachable both from
// the other containers on the network and from the host, so spatec and the
// arms use the same broker by the same address.
//
// It keeps every record in memory and runs until SIGTERM or SIGINT.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"syscall"

	"spatec.dev/spatec/exec/broker"
)

// version is what -version prints.
const version = "0.1.0"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], net.InterfaceAddrs, os.Stdout, os.Stderr))
}

// Exit codes: 0 stopped on a signal, 1 the broker failed, 2 bad flags.
func run(ctx context.Context, args []string, addrs func() ([]net.Addr, error), stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("spatec-broker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	partitions := fs.Int("partitions", 1, "partition count of topics created without one")
	port := fs.Int("port", 9092, "port to listen on, on every interface")
	advertise := fs.String("advertise", "", "address to advertise (ip:port); default: this host's own IPv4 address at -port")
	showVersion := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *showVersion {
		fmt.Fprintf(stdout, "spatec-broker %s\n", version)
		return 0
	}
	addr := *advertise
	if addr == "" {
		ip, err := ownAddress(addrs)
		if err != nil {
			fmt.Fprintf(stderr, "spatec-broker: %v; give -advertise ip:port\n", err)
			return 2
		}
		addr = netip.AddrPortFrom(ip, uint16(*port)).String()
	}
	b, err := broker.StartEmbedded(ctx, *partitions, broker.WithAdvertised(addr))
	if err != nil {
		fmt.Fprintf(stderr, "spatec-broker: %v\n", err)
		return 1
	}
	defer b.Close()
	fmt.Fprintf(stdout, "spatec-broker %s: %d partitions a topic, advertising %s\n", version, *partitions, addr)
	<-ctx.Done()
	return 0
}

// ownAddress is the first IPv4 address of an interface that is not the
// loopback: in a container, its address on the container network.
func ownAddress(addrs func() ([]net.Addr, error)) (netip.Addr, error) {
	all, err := addrs()
	if err != nil {
		return netip.Addr{}, fmt.Errorf("listing this host's addresses: %w", err)
	}
	for _, a := range all {
		n, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip, ok := netip.AddrFromSlice(n.IP)
		if ip = ip.Unmap(); ok && ip.Is4() && !ip.IsLoopback() {
			return ip, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("no IPv4 address other than the loopback among %v", all)
}
