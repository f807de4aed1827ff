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

// The permission each method needs, one table per interface of the meta
// API (meta.FS, meta.Cluster, meta.Sessions and the optional ones), so that
// the rules of a concern read in one place; rules merges them. A method
// missing here is refused to everyone, and TestRulesPerInterface fails
// until each table names exactly its interface's methods.

// fsRules: meta.FS.
var fsRules = map[string]rule{
	// Reading the namespace.
	"Lookup":    {auth.ReadNamespace, inTree},
	"GetAttr":   {auth.ReadNamespace, inTree},
	"ReadDir":   {auth.ReadNamespace, inTree},
	"GetRecipe": {auth.ReadNamespace, inTree},
	"GetXattr":  {auth.ReadNamespace, inTree},
	"ListXattr": {auth.ReadNamespace, inTree},
	"StatFS":    {auth.ReadNamespace, inTree}, // totals only
	// What any mount, read-only ones included, needs to work: opens and
	// fsync.
	"HoldOpen":    {auth.ReadNamespace, inTree},
	"ReleaseOpen": {auth.ReadNamespace, inTree},
	"Sync":        {auth.ReadNamespace, inTree},
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
}

// sessionRules: meta.Sessions. Every mount, read-only ones included, keeps
// a session and polls its callbacks; a session belongs to the identity
// that opened it (sessions.go).
var sessionRules = map[string]rule{
	"OpenSession":  {auth.ReadNamespace, inTree},
	"Callbacks":    {auth.ReadNamespace, inTree},
	"CloseSession": {auth.ReadNamespace, inTree},
}

// clusterRules: meta.Cluster and meta.BlockLister (ListBlocks is checked
// under WalkBlocks' rule).
var clusterRules = map[string]rule{
	// The server map, to read blocks from: no inodes in it.
	"Servers": {auth.ReadNamespace, inTree},
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
}

// quotaRules: meta.QuotaAPI. Set and removed by admins, read by any caller
// (a confined one: in its subtree; the list spans the cluster).
var quotaRules = map[string]rule{
	"SetQuota":    {auth.Administer, cluster},
	"RemoveQuota": {auth.Administer, cluster},
	"Quota":       {auth.ReadNamespace, inTree},
	"Quotas":      {auth.ReadNamespace, cluster},
	"QuotaOf":     {auth.ReadNamespace, inTree}, // df in a quota tree
}

// writebackRules: meta.WritebackAPI, worked by gateways, its figures read
// by status.
var writebackRules = map[string]rule{
	"ClaimWriteback":  {auth.CacheHome, cluster},
	"WritebackDone":   {auth.CacheHome, cluster},
	"WritebackFailed": {auth.CacheHome, cluster},
	"WritebackToken":  {auth.CacheHome, cluster},
	"WritebackStats":  {auth.ReadNamespace, cluster},
	"RequestFlush":    {auth.CacheHome, cluster}, // admins and gateways
}

// filesetRules: meta.FilesetAPI, FilesetReadsAPI, EvictAPI, VanishAPI and
// GatewaysAPI. Filesets are administered by admins, read by any unconfined
// caller (mounts learn a directory's fileset), filled by gateways.
var filesetRules = map[string]rule{
	"CreateFileset":   {auth.Administer, cluster},
	"DeleteFileset":   {auth.Administer, cluster},
	"Fileset":         {auth.ReadNamespace, cluster},
	"Filesets":        {auth.ReadNamespace, cluster},
	"AddFilesetReads": {auth.ReadNamespace, cluster}, // a mount's read counts
	"IngestDir":       {auth.CacheHome, cluster},
	"SetGateway":      {auth.CacheHome, cluster},
	"EvictData":       {auth.CacheHome, cluster}, // admins and gateways
	"RemoveVanished":  {auth.CacheHome, cluster}, // admins and gateways
	// Gateway processes: each registers itself (bound to its name);
	// mounts list them to find an inode's owner.
	"RegisterGateway": {auth.CacheHome, cluster},
	"Gateways":        {auth.ReadNamespace, cluster},
}

// tables are the per-interface tables, by the interfaces they cover.
var tables = []struct {
	ifaces []string // meta's interface names
	rules  map[string]rule
}{
	{[]string{"FS"}, fsRules},
	{[]string{"Sessions"}, sessionRules},
	{[]string{"Cluster"}, clusterRules},
	{[]string{"QuotaAPI"}, quotaRules},
	{[]string{"WritebackAPI"}, writebackRules},
	{[]string{"FilesetAPI", "FilesetReadsAPI", "EvictAPI", "VanishAPI", "GatewaysAPI"}, filesetRules},
}

// rules is every table merged: the permission each method needs.
var rules = func() map[string]rule {
	m := map[string]rule{}
	for _, t := range tables {
		for name, r := range t.rules {
			if _, dup := m[name]; dup {
				panic("authz: method " + name + " in two tables")
			}
			m[name] = r
		}
	}
	return m
}()
