// Package statuspage is the meta role's status page: one server-rendered
// HTML page (html/template, no script; it reloads itself with a meta
// refresh) and its JSON twin for scripts, served by Handler:
//
//	GET /             the page
//	GET /status.json  the same Snapshot as JSON
//
// Anything else is 404, any other method 405. A Snapshot is gathered on
// every request, bounded by Config.Timeout, through admin.Status: the
// servers with their states, usage, space (free, size, bytes on disk) and
// scrub progress, the mover's report (under-replicated, misplaced, lost
// blocks, bytes to move), the files and bytes the meta service counts. Nothing is cached between requests but
// the previous counter sample, from which the throughput is computed (see
// throughput.go for what is and is not measured), and the ring of recent
// errors (Ring, fed by a slog handler, Tee, wrapped around the meta role's
// logger). The page needs no credentials, so records about callers (those
// naming a peer: refused connections and calls, whose reasons may name an
// identity, its role and --root) are not kept, only counted by message.
//
// The handler only reads: it calls no method of meta.API that changes
// anything and no block-server method but usage, space and scrub
// progress. Who may see it is the business of the listener it is mounted
// on.
package statuspage
