package admin

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"tessera/internal/kv"
	"tessera/internal/meta"
)

// The cluster as a whole in `tessera status` (issue 13): its name, its meta
// processes and their sites, the members of a replicated metadata store
// and their health, and the block servers grouped by site.

// ClusterView is what the meta processes tell of the cluster
// (Cluster.Describe): the command line asks every meta address it was
// given, the status page its own process.
type ClusterView struct {
	Name       string        `json:"name,omitempty"`                // the cluster's name ("" none given)
	Metas      []MetaStatus  `json:"metas"`                         // the meta processes asked
	Replicated bool          `json:"replicated_store"`              // the store lists members (an etcd cluster)
	Members    []StoreMember `json:"store_members,omitempty"`       // the store's servers and their health
	MembersErr string        `json:"store_members_error,omitempty"` // why the members could not be listed
	// Maintenance is the store's compaction and defragmentation by the
	// meta role (etcd); nil when the store has none.
	Maintenance    *StoreMaintenance `json:"store_maintenance,omitempty"`
	MaintenanceErr string            `json:"store_maintenance_error,omitempty"` // why it could not be read
}

// StoreMaintenance is kv.Maintenance for status output.
type StoreMaintenance struct {
	CompactedRev int64     `json:"compacted_revision"` // 0: never compacted
	CompactedAt  time.Time `json:"compacted_at,omitzero"`
	DefragAt     time.Time `json:"defragmented_at,omitzero"`
	DefragMember string    `json:"defragmented_member,omitempty"`
	Err          string    `json:"error,omitempty"` // why the latest round failed
	At           time.Time `json:"latest_round,omitzero"`
}

// Maintenance converts a store's maintenance state for a ClusterView.
func Maintenance(m *kv.Maintenance) *StoreMaintenance {
	if m == nil {
		return nil
	}
	return &StoreMaintenance{CompactedRev: m.CompactedRev, CompactedAt: m.CompactedAt, DefragAt: m.DefragAt,
		DefragMember: m.DefragMember, Err: m.Err, At: m.At}
}

// StoreMember is one server of a replicated metadata store (kv.Member).
type StoreMember struct {
	Name    string `json:"name"`
	Addr    string `json:"addr"`
	Leader  bool   `json:"leader"`
	Healthy bool   `json:"healthy"`
	Err     string `json:"error,omitempty"`     // why not healthy
	Rev     int64  `json:"revision"`            // latest applied, when healthy
	DBSize  int64  `json:"db_size,omitempty"`   // its backend file, bytes; 0 unknown
	DBInUse int64  `json:"db_in_use,omitempty"` // the part of it holding data
}

// Members converts a store's members for a ClusterView.
func Members(ms []kv.Member) []StoreMember {
	out := make([]StoreMember, 0, len(ms))
	for _, m := range ms {
		out = append(out, StoreMember{Name: m.Name, Addr: m.Addr, Leader: m.Leader, Healthy: m.Healthy, Err: m.Err, Rev: m.Rev,
			DBSize: m.DBSize, DBInUse: m.DBInUse})
	}
	return out
}

// MetaStatus is one meta process as a client found it.
type MetaStatus struct {
	Addr    string        `json:"addr"`
	Site    string        `json:"site,omitempty"`
	RTT     time.Duration `json:"rtt_ns,omitempty"` // round trip of its Hello; 0 not measured
	Err     string        `json:"error,omitempty"`  // why it did not answer; "" answered
	Current bool          `json:"in_use"`           // the one this command's calls went to
}

// SiteStatus counts a site's block servers by state, its meta processes,
// and the blocks under-replicated there (the site's replication lag).
type SiteStatus struct {
	Name     string `json:"name"` // "" for servers and metas given no site
	Servers  int    `json:"servers"`
	Up       int    `json:"up"`
	Draining int    `json:"draining"`
	Down     int    `json:"down"`
	Metas    int    `json:"metas"`
	// UnderReplicated counts the blocks with fewer copies in the site
	// than their per-site replication spec asks for, from the mover's
	// latest round (meta.MoverProgress.UnderBySite).
	UnderReplicated int64 `json:"under_replicated"`
	// UnderBytes sums those blocks' sizes, and LagSeconds is how long the
	// oldest of them had been missing there (since the mover first saw it
	// missing) at the mover's latest report: the site's replication lag
	// (0 when nothing is missing, or the age is not known).
	UnderBytes int64   `json:"under_bytes"`
	LagSeconds float64 `json:"lag_seconds"`
}

// sites groups r's servers and metas by site, in name order.
func (r StatusReport) sites() []SiteStatus {
	by := map[string]*SiteStatus{}
	get := func(name string) *SiteStatus {
		if by[name] == nil {
			by[name] = &SiteStatus{Name: name}
		}
		return by[name]
	}
	for _, s := range r.Servers {
		st := get(s.Site)
		st.Servers++
		switch {
		case s.State == meta.StateDown:
			st.Down++
		case s.State == meta.StateDraining:
			st.Draining++
		case s.Err == nil:
			st.Up++
		}
	}
	if r.View != nil {
		for _, m := range r.View.Metas {
			if m.Err == "" {
				get(m.Site).Metas++
			}
		}
	}
	for _, u := range r.Mover.UnderBySite {
		st := get(u.Site)
		st.UnderReplicated, st.UnderBytes = u.N, u.Bytes
		if u.Since > 0 && r.Mover.At > u.Since {
			st.LagSeconds = time.Duration(r.Mover.At - u.Since).Seconds()
		}
	}
	out := make([]SiteStatus, 0, len(by))
	for _, s := range by {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b SiteStatus) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// describe fills r.View and r.Sites.
func (c *Cluster) describe(ctx context.Context, r *StatusReport) {
	if c.Describe != nil {
		v, err := c.Describe(ctx)
		if err != nil {
			v.MembersErr = fmt.Sprintf("cluster status: %v", err)
		}
		r.View = &v
	}
	r.Sites = r.sites()
}

// printCluster writes the cluster's lines of r: they come before the
// file-system lines, none starts with "server ".
func (r StatusReport) printCluster(w io.Writer) {
	if v := r.View; v != nil {
		if v.Name != "" {
			fmt.Fprintf(w, "cluster: %s\n", v.Name)
		}
		for _, m := range v.Metas {
			state := "answering"
			switch {
			case m.Err != "":
				state = "unreachable: " + m.Err
			case m.Current:
				state = "in use"
			}
			fmt.Fprintf(w, "meta %s: site=%s rtt=%s state=%s\n", m.Addr, orNone(m.Site), rtt(m.RTT), state)
		}
		if v.Replicated {
			healthy := 0
			for _, m := range v.Members {
				if m.Healthy {
					healthy++
				}
			}
			fmt.Fprintf(w, "store members: %d (%d healthy)\n", len(v.Members), healthy)
			for _, m := range v.Members {
				state := "healthy"
				if !m.Healthy {
					state = "unhealthy: " + m.Err
				}
				db := ""
				if m.DBSize > 0 {
					db = fmt.Sprintf(" db=%d in_use=%d", m.DBSize, m.DBInUse)
				}
				fmt.Fprintf(w, "store member %s: addr=%s leader=%t rev=%d%s state=%s\n", m.Name, m.Addr, m.Leader, m.Rev, db, state)
			}
			if v.MembersErr != "" {
				fmt.Fprintf(w, "store members error: %s\n", v.MembersErr)
			}
			if m := v.Maintenance; m != nil {
				errs := ""
				if m.Err != "" {
					errs = " error=" + m.Err
				}
				fmt.Fprintf(w, "store maintenance: compacted_rev=%d compacted=%s defragmented=%s%s last_round=%s%s\n",
					m.CompactedRev, when(m.CompactedAt), when(m.DefragAt), memberOf(m.DefragMember), when(m.At), errs)
			}
			if v.MaintenanceErr != "" {
				fmt.Fprintf(w, "store maintenance error: %s\n", v.MaintenanceErr)
			}
		}
	}
	if len(r.Sites) > 1 || len(r.Sites) == 1 && r.Sites[0].Name != "" {
		for _, s := range r.Sites {
			lag := "-"
			if s.UnderReplicated > 0 {
				lag = time.Duration(s.LagSeconds * float64(time.Second)).Round(time.Second).String()
			}
			fmt.Fprintf(w, "site %s: servers=%d up=%d draining=%d down=%d metas=%d under_replicated=%d under_bytes=%d lag=%s\n",
				orNone(s.Name), s.Servers, s.Up, s.Draining, s.Down, s.Metas, s.UnderReplicated, s.UnderBytes, lag)
		}
	}
}

// when is t for status lines: RFC 3339 in UTC, "-" never.
func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func memberOf(name string) string {
	if name == "" {
		return ""
	}
	return " (" + name + ")"
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func rtt(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return d.Round(time.Microsecond).String()
}
