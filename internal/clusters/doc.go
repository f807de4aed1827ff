// Package clusters finds a cluster's meta processes by the cluster's name,
// as rNFS finds its servers (the global namespace of issue 13): first in a
// clusters file, then in DNS SRV records.
//
// The clusters file (tessera mount --clusters FILE, default
// DefaultFile) has one cluster a line: its name, then the addresses of its
// meta processes, each optionally followed by @ and the process's site.
// Blank lines and lines starting with # are ignored; fields are separated
// by spaces or tabs:
//
//	# name   meta addresses
//	lab      10.0.0.5:7400
//	climate  meta1.a.example:7400@siteA meta1.b.example:7400@siteB
//
// A name may appear once; an address must be host:port. A malformed line
// is an error naming the file, the line and what was wrong.
//
// DNS: a name the file does not hold is looked up as the SRV records
// _tessera._tcp.NAME; each record's target and port is a meta address, in
// the order of the records' priorities (net.Resolver.LookupSRV). SRV
// records carry no site: the client learns each process's site from its
// Hello. Which of the addresses a client uses is not decided here: the
// caller measures them (metarpc.DialMany picks the nearest).
//
// A mount source NAME:/sub/dir names a cluster and a directory in it
// (ParseSource).
package clusters
