// Command spatec-netcut cuts a container off from some addresses, and mends
// the cut: the network partition of a failure scenario. spatec runs it in
// the network namespace of the container the partition breaks (Docker's
// network mode container:<id>, with CAP_NET_ADMIN), once to cut and once to
// mend, so that only that container's traffic with those addresses is
// lost: spatec's own reads of the same server, from the host, go on.
//
// The cut is a table of nftables rules of its own in that namespace, which
// drops every packet to and from the addresses as a partition would, with
// no reset and no ICMP: a connection open across it hangs, and a new one
// times out, as across a failed link. Mending deletes the table; the
// engine's own rules in the namespace are never touched.
//
//	spatec-netcut cut 172.18.0.3 172.18.0.4
//	spatec-netcut mend
package main

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
)

// table is the name of the table the cut lives in.
const table = "spatec_partition"

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

// Exit codes: 0 done, 1 the rules could not be changed, 2 bad arguments.
func run(args []string, stderr io.Writer) int {
	verb := ""
	if len(args) > 0 {
		verb = args[0]
	}
	// cut needs addresses to cut off, and mend takes none.
	if !(verb == "cut" && len(args) > 1 || verb == "mend" && len(args) == 1) {
		fmt.Fprintln(stderr, "usage: spatec-netcut cut ADDRESS... | spatec-netcut mend")
		return 2
	}
	var addrs []netip.Addr
	for _, a := range args[1:] {
		ip, err := netip.ParseAddr(a)
		if err != nil || !ip.Is4() {
			fmt.Fprintf(stderr, "spatec-netcut: %q is not an IPv4 address (the run's network is IPv4)\n", a)
			return 2
		}
		addrs = append(addrs, ip)
	}
	conn, err := nftables.New()
	if err == nil {
		err = apply(conn, addrs)
	}
	if err != nil {
		fmt.Fprintf(stderr, "spatec-netcut %s: %v\n", verb, err)
		return 1
	}
	if len(addrs) > 0 {
		fmt.Fprintf(stderr, "spatec-netcut: cut off from %v\n", addrs)
	} else {
		fmt.Fprintln(stderr, "spatec-netcut: mended")
	}
	return 0
}

// apply replaces the partition's table with one that drops every packet to
// and from addrs; with none, it only removes the table. One batch: the
// namespace is never half cut.
func apply(conn *nftables.Conn, addrs []netip.Addr) error {
	tables, err := conn.ListTablesOfFamily(nftables.TableFamilyIPv4)
	if err != nil {
		return fmt.Errorf("listing the namespace's tables: %w", err)
	}
	t := &nftables.Table{Family: nftables.TableFamilyIPv4, Name: table}
	for _, have := range tables {
		if have.Name == table {
			conn.DelTable(t)
		}
	}
	if len(addrs) > 0 {
		conn.AddTable(t)
		accept := nftables.ChainPolicyAccept
		in := conn.AddChain(&nftables.Chain{Name: "in", Table: t, Type: nftables.ChainTypeFilter,
			Hooknum: nftables.ChainHookInput, Priority: nftables.ChainPriorityFilter, Policy: &accept})
		out := conn.AddChain(&nftables.Chain{Name: "out", Table: t, Type: nftables.ChainTypeFilter,
			Hooknum: nftables.ChainHookOutput, Priority: nftables.ChainPriorityFilter, Policy: &accept})
		for _, a := range addrs {
			// The IPv4 header's source address is at byte 12, its
			// destination at byte 16.
			conn.AddRule(&nftables.Rule{Table: t, Chain: in, Exprs: drop(12, a)})
			conn.AddRule(&nftables.Rule{Table: t, Chain: out, Exprs: drop(16, a)})
		}
	}
	if err := conn.Flush(); err != nil {
		if errors.Is(err, os.ErrPermission) {
			return fmt.Errorf("%w (the container needs CAP_NET_ADMIN)", err)
		}
		return err
	}
	return nil
}

// drop is a rule's expressions: drop a packet whose IPv4 address at offset
// in the header is a.
func drop(offset uint32, a netip.Addr) []expr.Any {
	b := a.As4()
	return []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: offset, Len: 4},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: b[:]},
		&expr.Verdict{Kind: expr.VerdictDrop},
	}
}
