package authz

import "tessera/internal/auth"

// scope says what a confined identity (one with a Root) may do with a
// method.
type scope int

const (
	// inTree: the method's inode arguments are checked against the root
	// and its replies mapped (or it names no inode).
	inTree scope = iota
	// cluster: the method reaches across the whole namespace or cluster;
	// a confined identity is refused it.
	cluster
)

// rule is what a method requires.
type rule struct {
	perm  auth.Permission
	scope scope
}

// rules is the one table of the permission each meta.API method needs. A
// method missing here is refused to everyone (and fails the table test).
var rules = map[string]rule{
	// Reading the namespace.
	"Lookup":    {auth.ReadNamespace, inTree},
	"GetAttr":   {auth.ReadNamespace, inTree},
	"ReadDir":   {auth.ReadNamespace, inTree},
	"GetRecipe": {auth.ReadNamespace, inTree},
	"GetXattr":  {auth.ReadNamespace, inTree},
	"ListXattr": {auth.ReadNamespace, inTree},
	"StatFS":    {auth.ReadNamespace, inTree}, // totals only
	// What any mount, read-only ones included, needs to work: opens,
	// sessions and their callbacks, fsync, and the server map to read
	// blocks from.
	"HoldOpen":     {auth.ReadNamespace, inTree},
	"ReleaseOpen":  {auth.ReadNamespace, inTree},
	"OpenSession":  {auth.ReadNamespace, inTree},
	"Callbacks":    {auth.ReadNamespace, inTree},
	"CloseSession": {auth.ReadNamespace, inTree},
	"Sync":         {auth.ReadNamespace, inTree},
	"Servers":      {auth.ReadNamespace, inTree}, // no inodes in it
	// Changing the namespace.
	"Create":      {auth.WriteNamespace, inTree},
	"SetAttr":     {auth.WriteNamespace, inTree},
	"Link":        {auth.WriteNamespace, inTree},
	"Unlink":      {auth.WriteNamespace, inTree},
	"Rmdir":       {auth.WriteNamespace, inTree},
	"Rename":      {auth.WriteNamespace, inTree},
	"Commit":      {auth.WriteNamespace, inTree},
	"SetXattr":    {auth.WriteNamespace, inTree},
	"RemoveXattr": {auth.WriteNamespace, inTree},
	"Reap":        {auth.WriteNamespace, inTree},
	// A writer's composed block stored whole: writers of any subtree
	// make them. Block hashes are not confined (see the design note).
	"Decompose": {auth.WriteNamespace, inTree},
	// Block servers joining and heartbeating (bound to their name).
	"RegisterServer": {auth.RegisterServer, cluster},
	// Administration, and what lists every inode.
	"SetServerState": {auth.Administer, cluster},
	"SetReplicas":    {auth.Administer, cluster},
	"WalkBlocks":     {auth.Administer, cluster},
	"MoverProgress":  {auth.Administer, cluster}, // names lost blocks' inodes
	// Directory quotas (meta.QuotaAPI): set and removed by admins, read
	// by any caller (a confined one: in its subtree; the list spans the
	// cluster).
	"SetQuota":    {auth.Administer, cluster},
	"RemoveQuota": {auth.Administer, cluster},
	"Quota":       {auth.ReadNamespace, inTree},
	"Quotas":      {auth.ReadNamespace, cluster},
	"QuotaOf":     {auth.ReadNamespace, inTree}, // df in a quota tree
	// Filesets (meta.FilesetAPI): administered by admins, read by any
	// unconfined caller (mounts learn a directory's fileset), filled by
	// gateways.
	// The write-back queue (meta.WritebackAPI): worked by gateways, its
	// figures read by status.
	"ClaimWriteback":  {auth.CacheHome, cluster},
	"WritebackDone":   {auth.CacheHome, cluster},
	"WritebackFailed": {auth.CacheHome, cluster},
	"WritebackToken":  {auth.CacheHome, cluster},
	"WritebackStats":  {auth.ReadNamespace, cluster},
	"RequestFlush":    {auth.CacheHome, cluster}, // admins and gateways
	"CreateFileset":   {auth.Administer, cluster},
	"DeleteFileset":   {auth.Administer, cluster},
	"Fileset":         {auth.ReadNamespace, cluster},
	"Filesets":        {auth.ReadNamespace, cluster},
	"AddFilesetReads": {auth.ReadNamespace, cluster}, // a mount's read counts
	// Gateway processes (meta.GatewaysAPI): each registers itself (bound
	// to its name); mounts list them to find an inode's owner.
	"RegisterGateway": {auth.CacheHome, cluster},
	"Gateways":        {auth.ReadNamespace, cluster},
	"IngestDir":       {auth.CacheHome, cluster},
	"SetGateway":      {auth.CacheHome, cluster},
	"EvictData":       {auth.CacheHome, cluster}, // admins and gateways
	"RemoveVanished":  {auth.CacheHome, cluster}, // admins and gateways
}
