// Package gwrpc is the gateway role as its own process (`tessera gateway`,
// issue 14) and how mounts and other gateways reach it over the network.
//
// Contract. A Node (StartNode) is one gateway process: it runs an Ingester
// and a write-back applier (gateway/writeback) over the cluster's meta
// service and data path, registers with the meta service as a live
// gateway (meta.GatewaysAPI: its address, site and counters, again every
// heartbeat; the service drops it from the live list once silent for
// meta.GatewayTTL) and serves the Gateway service (proto/tessera/gateway)
// on its port through metarpc.ServeWith: the same mutual TLS, protocol
// metadata, bounds and error encoding as the meta port. Callers without
// credentials are refused; ListDir, Fetch and Revalidate are for mounts
// (client-rw, client-ro) and gateways and admins, FetchData for gateways
// and admins; identities confined to a subtree are refused. Mounts and
// gateways dialing a gateway (Dial) refuse a server whose certificate is
// not of role gateway: the registry's addresses are not trusted alone.
//
// Ownership. The owner of an inode is the first of gateway.Rendezvous over
// the live gateways' IDs. A Router is what a mount asks (fuse.Gateway): it
// lists the live gateways (again at most every meta.DefaultHeartbeat, and
// after a failure) and calls the owner; a gateway that does not answer or
// dies before it replies is skipped for 2*meta.GatewayTTL and the request
// goes to the next gateway by the same hash, so a read whose owner is
// killed completes through the next owner. The gateway asked does the work
// whatever its own view of ownership (it is the group's self). It takes
// the live list from the meta service before every fetch (not only at its
// heartbeat: a gateway registered since takes its share at once) and
// shares the fetch and the prefetch it starts among all the live gateways
// (gateway's deal.go; FetchData over the network, a Remote per peer); a
// peer that is gone has its range stored by the asking gateway itself,
// logged at Warn and counted (Node.Fallbacks).
package gwrpc
