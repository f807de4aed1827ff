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
// Failure domains. Spread picks r of a ranking so that the copies open a new
// site, else a new rack, else a new host, before doubling up.
//
// Choice. A writer may put a block's r copies on any r of its r+1
// Candidates (Spread of r+1) whose domain spread is as wide as that of the
// first r (Options); Choose leaves out the candidate the writer has loaded
// most ("power of two choices"), which evens out the load a single file's
// blocks put on each server where plain hashing leaves it binomial. Readers
// try the candidates first and fall back along them; the mover counts any
// option as placed. Ties on cost are broken by the block hash, so that the
// options are equally likely and a map change moves about as much as plain
// rendezvous hashing does.
//
// Specs. A replication spec (Spec, ParseSpec: "3" or "a:1,b:1,c:1") is
// placed group by group (Spec.Groups): a number is one group over every
// server; a per-site spec is a group per named site, holding its K copies
// among that site's servers. InGroup filters the global ranking to a
// group, which is rendezvous hashing within the site (a site's placement
// does not depend on the servers of other sites), and Candidates, Options
// and Choose then apply within the group. A group counts as holding a
// block once a majority of its K copies do (Group.Need); writers answer
// once a majority of the groups count. Merge combines the specs of the
// files sharing a block (the most copies per site).
//
// The weight function (score) is part of Tessera's persistent format:
// changing it relocates every block. Per-server capacity weights are not
// handled here yet.
package placement
