// Package placement decides which block servers hold a block, with
// rendezvous (highest-random-weight) hashing: every server gets a weight for
// the block, a pseudo-random function of the block hash and the server id,
// and the block lives on the R servers with the highest weights.
//
// Contract. Placement is a pure function of the block hash, the set of
// server ids and R: the order in which servers are given does not matter, and
// every process computes the same answer with no table of block locations.
// Adding a server moves to it about 1/N of the blocks (those for which it
// outranks one of their R servers) and nothing else moves; removing a server
// moves only its own blocks, each to the next server in its ranking. Blocks
// spread evenly: each server's share has the binomial spread of independent
// random choices.
//
// The weight function (score) is part of Tessera's persistent format:
// changing it relocates every block. Failure domains (host, rack, site) and
// per-server capacity weights are not handled here yet.
package placement
