// Package mover is Tessera's repair and rebalance loop (DESIGN §3.2), run by
// the meta role. There is no per-block location table: a block belongs on
// placement.Spread(placement.Pick(h, up servers, all), domains, R), so after
// a server goes down, comes up, is added or drains, some blocks have fewer
// than R copies or copies where they no longer belong. The mover finds them
// and moves them. Writers put a block on any R of its R+1 candidates
// (placement.Candidates, placement.Options): any such option is a correct
// placement, so the mover does not undo the writers' balancing. A block's
// placement for the mover is the option its copies already cover best
// (ties: the option leaving out the candidate holding the most bytes, so
// copies to restore go to the emptier server, e.g. a new one). Adding a
// server moves a copy only when the new server pushes a holder out of the
// candidates: about R/(N+1) of the copies, as plain rendezvous hashing, for
// data whose writers spread it over the options (blocks written before
// writers chose, all on the first R ranks, move only on later changes).
//
// A round lists the live blocks (meta WalkBlocks) with each block's
// replication spec (the specs of the inodes referring to it merged by
// placement.Merge: the largest number, the most copies per site; an inode
// naming none has the map's Replicas); a per-site spec is planned site by
// site over each site's own candidates (PlanSpecs), and a block short of
// copies in a site is counted for that site in the progress report
// (MoverProgress.UnderBySite), with their bytes and, kept in memory from
// round to round, when the mover first saw the oldest of them short there
// (the site's replication lag; a new leader starts afresh). The round lists what every up or draining
// server holds (block.Lister), and plans (Plan, a pure function) for each
// block the copies to placement
// members that lack it and the removals of copies outside the placement
// (copies outside the candidates, or extra copies within them).
// Copies read the block from any live holder (verified against its hash by
// the block client; a corrupt copy is skipped) and PUT it, throttled by a
// token bucket (bytes per second) with a bounded number of blocks in flight.
// Every block server call is bounded (the block client's budget), and a
// server that fails as unavailable during a round (cut off after the round
// listed it) gets no further calls in that round: the round ends, with the
// server named in its error, instead of making each remaining copy wait out
// the budget against it; the next round lists the servers again.
// A copy outside the placement is removed only once every placement member
// holds the block and at least R other copies remain on up servers, so that
// no step of a drain or a rebalance ever leaves a block under R. A block is
// under-replicated when it has fewer than R live copies, on servers up or
// draining (a draining server still serves reads): a drain alone never
// makes a block under-replicated, a server going down does. A block is
// lost when no listed server holds it: a corrupt copy moved aside by the
// scrub or by fsck --repair no longer counts, so a block whose every copy
// rotted is lost. The report names the first meta.MaxLostReported lost
// blocks with the inodes whose recipes refer to them (a second walk of the
// recipes, only in a round that found some).
//
// Contract. The mover never touches a block no recipe refers to (that is
// gc's), never removes the last copies, and reports through
// PutMoverProgress during and after each round, so that `tessera status` on
// any meta process shows under-replicated and misplaced counts and the bytes
// left to move. Rounds run every Config.Interval and soon after the map's
// epoch changes. It reaches block servers only through Config.Dial and the
// meta service only through the Meta interface.
package mover
