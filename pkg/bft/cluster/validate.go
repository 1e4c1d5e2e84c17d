package cluster

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/augustus-db/augustus/pkg/bft/auth"
	"github.com/augustus-db/augustus/pkg/bft/internal/quorum"
)

// MaxClusterIDLen bounds the cluster id.
const MaxClusterIDLen = 128

// namePattern is what a replica or client name may look like: it names a
// key file, so it is a plain file name.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// validator collects problems; the namespaces it keeps span the whole
// cluster: names (they name key files in one directory), addresses and
// public keys.
type validator struct {
	problems []error
	names    map[string]string // name -> where
	addrs    map[string]string // normalized host:port -> where
	keys     map[string]string // raw key -> where
}

func (v *validator) add(kind error, format string, args ...any) {
	v.problems = append(v.problems, newProblem(kind, format, args...))
}

// addCause is add for a problem that an error found: the problem wraps it
// too, so errors.Is and errors.As reach the cause.
func (v *validator) addCause(kind, cause error, format string, args ...any) {
	v.problems = append(v.problems, &problem{kinds: []error{kind, cause}, msg: fmt.Sprintf(format, args...)})
}

// Validate checks the cluster and returns a *ValidationError listing every
// problem, or nil. Tunables must already be set (Load and Generate call
// SetDefaults first).
func (c *Cluster) Validate() error {
	v := &validator{names: map[string]string{}, addrs: map[string]string{}, keys: map[string]string{}}
	v.params(c)
	groups := v.groups(c)
	v.clients(c)
	v.admins(c)
	v.sqlUsers(c)
	v.partitions(c, groups)
	if len(v.problems) == 0 {
		return nil
	}
	return &ValidationError{Problems: v.problems}
}

func (v *validator) params(c *Cluster) {
	switch {
	case c.ClusterID == "":
		v.add(ErrBadParameter, "cluster_id is empty")
	case len(c.ClusterID) > MaxClusterIDLen:
		v.add(ErrBadParameter, "cluster_id has %d bytes, at most %d allowed", len(c.ClusterID), MaxClusterIDLen)
	case strings.IndexFunc(c.ClusterID, func(r rune) bool { return r <= ' ' || r > '~' }) >= 0:
		v.add(ErrBadParameter, "cluster_id %q must be printable ASCII without spaces", c.ClusterID)
	}
	if c.F < 0 || c.F > (quorum.MaxReplicas-1)/3 {
		v.add(ErrBadParameter, "f=%d: want 0 <= f and 3f+1 <= %d", c.F, quorum.MaxReplicas)
	}
	if c.ClientWindow < 1 {
		v.add(ErrBadParameter, "client_window=%d: must be at least 1", c.ClientWindow)
	}
	k, l := c.CheckpointInterval, c.LogWindow
	if k == 0 || l%k != 0 || l < 2*k {
		v.add(ErrBadParameter, "log_window L=%d must be a multiple of checkpoint_interval K=%d and at least 2K", l, k)
	}
	switch c.Sync {
	case "", SyncFsync, SyncNone:
	default:
		v.add(ErrBadParameter, "sync %q: want %q or %q", c.Sync, SyncFsync, SyncNone)
	}
	switch c.ClientPolicy {
	case PolicyListed:
		if len(c.Clients) == 0 {
			v.add(ErrBadParameter, "client_policy %q admits no client: list clients or use %q", PolicyListed, PolicyOpen)
		}
	case PolicyOpen:
	default:
		v.add(ErrUnknownPolicy, "client_policy %q: want %q or %q", c.ClientPolicy, PolicyListed, PolicyOpen)
	}
}

// groups checks the groups and returns the set of group ids.
func (v *validator) groups(c *Cluster) map[uint32]bool {
	ids := map[uint32]bool{}
	if len(c.Groups) == 0 {
		v.add(ErrGroupSize, "no groups")
		return ids
	}
	n := c.N()
	for gi := range c.Groups {
		g := &c.Groups[gi]
		if ids[g.ID] {
			v.add(ErrDuplicate, "groups[%d]: group id %d appears twice", gi, g.ID)
		}
		ids[g.ID] = true
		if len(g.Replicas) != n {
			hint := ""
			if m := len(g.Replicas); m%3 == 1 {
				hint = fmt.Sprintf(" (%d replicas would fit f=%d)", m, (m-1)/3)
			}
			v.add(ErrGroupSize, "group %d has %d replicas; f=%d needs exactly 3f+1 = %d%s", g.ID, len(g.Replicas), c.F, n, hint)
		}
		byIndex := map[uint32]string{}
		for ri := range g.Replicas {
			r := &g.Replicas[ri]
			where := fmt.Sprintf("group %d replica %q", g.ID, r.Name)
			if r.Name == "" {
				where = fmt.Sprintf("groups[%d].replicas[%d]", gi, ri)
			}
			if int(r.Index) >= len(g.Replicas) {
				v.add(ErrGroupSize, "%s has index %d; indexes must be 0..%d", where, r.Index, len(g.Replicas)-1)
			} else if prev, dup := byIndex[r.Index]; dup {
				v.add(ErrDuplicate, "%s has index %d, like %s", where, r.Index, prev)
			}
			byIndex[r.Index] = where
			v.name(where, r.Name)
			v.addr(where, "peer_addr", r.PeerAddr, true)
			v.addr(where, "client_addr", r.ClientAddr, true)
			v.addr(where, "metrics_addr", r.MetricsAddr, false)
			v.key(where, r.PublicKey)
		}
	}
	return ids
}

func (v *validator) clients(c *Cluster) {
	for i := range c.Clients {
		cl := &c.Clients[i]
		where := fmt.Sprintf("client %q", cl.Name)
		if cl.Name == "" {
			where = fmt.Sprintf("clients[%d]", i)
		}
		v.name(where, cl.Name)
		v.key(where, cl.PublicKey)
	}
}

func (v *validator) name(where, name string) {
	if !namePattern.MatchString(name) {
		v.add(ErrBadName, "%s: name %q must match %s (it names the key file)", where, name, namePattern)
		return
	}
	if prev, dup := v.names[name]; dup {
		v.add(ErrDuplicate, "%s: name %q is also used by %s", where, name, prev)
		return
	}
	v.names[name] = where
}

func (v *validator) addr(where, field, addr string, required bool) {
	if addr == "" {
		if required {
			v.add(ErrBadAddress, "%s: %s is empty", where, field)
		}
		return
	}
	norm, err := normalizeAddr(addr)
	if err != nil {
		v.addCause(ErrBadAddress, err, "%s: %s %q: %v", where, field, addr, err)
		return
	}
	if prev, dup := v.addrs[norm]; dup {
		v.add(ErrDuplicate, "%s: %s %q is also used by %s", where, field, addr, prev)
		return
	}
	v.addrs[norm] = where + " " + field
}

// normalizeAddr checks host:port and returns a form in which equal
// addresses compare equal (lower-case host names, canonical IPs).
func normalizeAddr(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("want host:port: %w", err)
	}
	if host == "" {
		return "", fmt.Errorf("the host is empty (peers and clients must be able to dial it)")
	}
	if strings.ContainsAny(host, " \t\r\n/") {
		return "", fmt.Errorf("the host %q is not a host name or IP address", host)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil || p == 0 {
		return "", fmt.Errorf("the port %q is not a number in 1..65535", port)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		host = ip.Unmap().String()
	} else {
		host = strings.ToLower(host)
	}
	return net.JoinHostPort(host, strconv.FormatUint(p, 10)), nil
}

func (v *validator) key(where, s string) {
	pub, err := auth.ParsePublicKey(s)
	if err != nil {
		v.problems = append(v.problems, &problem{
			kinds: []error{ErrBadKey, err},
			msg:   fmt.Sprintf("%s: public_key: %v", where, err),
		})
		return
	}
	if prev, dup := v.keys[string(pub)]; dup {
		v.add(ErrDuplicate, "%s: public_key is also the key of %s", where, prev)
		return
	}
	v.keys[string(pub)] = where
}

// bound is a decoded partition.
type bound struct {
	i          int
	start, end []byte // end nil: +inf
}

func (v *validator) partitions(c *Cluster, groups map[uint32]bool) {
	if len(c.Partitions) == 0 {
		v.add(ErrBadPartitions, "no partitions: the key space must be covered")
		return
	}
	var bs []bound
	for i, p := range c.Partitions {
		start, end, err := p.Bounds()
		if err != nil {
			v.addCause(ErrBadPartitions, err, "partitions[%d]: %v", i, err)
			continue
		}
		if !groups[p.Group] {
			v.add(ErrBadPartitions, "partitions[%d] [%s, %s) names unknown group %d", i, showStart(p.Start), showEnd(p.End), p.Group)
		}
		if end != nil && bytes.Compare(start, end) >= 0 {
			v.add(ErrBadPartitions, "partitions[%d] is empty: start %s is not below end %s", i, showStart(p.Start), showEnd(p.End))
			continue
		}
		bs = append(bs, bound{i: i, start: start, end: end})
	}
	if len(bs) == 0 {
		return
	}
	sort.SliceStable(bs, func(a, b int) bool { return bytes.Compare(bs[a].start, bs[b].start) < 0 })
	if len(bs[0].start) != 0 {
		v.add(ErrBadPartitions, "gap: keys below %s belong to no partition", hex.EncodeToString(bs[0].start))
	}
	// reach is the furthest end seen so far (nil: +inf), set by reacher.
	reach, reacher := bs[0].end, bs[0].i
	for _, next := range bs[1:] {
		switch cmp := compareEnd(reach, next.start); {
		case cmp > 0:
			v.add(ErrBadPartitions, "overlap: partitions[%d] and partitions[%d] both hold key %s", reacher, next.i, showStart(hex.EncodeToString(next.start)))
		case cmp < 0:
			v.add(ErrBadPartitions, "gap: keys from %s to %s belong to no partition", hex.EncodeToString(reach), hex.EncodeToString(next.start))
		}
		if reach != nil && (next.end == nil || bytes.Compare(next.end, reach) > 0) {
			reach, reacher = next.end, next.i
		}
	}
	if reach != nil {
		v.add(ErrBadPartitions, "gap: keys from %s up belong to no partition", hex.EncodeToString(reach))
	}
}

// compareEnd compares an end bound (nil: +inf) with a start bound.
func compareEnd(end, start []byte) int {
	if end == nil {
		return 1
	}
	return bytes.Compare(end, start)
}

func showStart(s string) string {
	if s == "" {
		return `"" (the first key)`
	}
	return s
}

func showEnd(s string) string {
	if s == "" {
		return `"" (+inf)`
	}
	return s
}

// Bounds decodes the partition's range [start, end); end is nil for +inf.
func (p Partition) Bounds() (start, end []byte, err error) {
	start, err = hex.DecodeString(p.Start)
	if err != nil {
		return nil, nil, fmt.Errorf("start %q is not hex: %w", p.Start, err)
	}
	if p.End == "" {
		return start, nil, nil
	}
	end, err = hex.DecodeString(p.End)
	if err != nil {
		return nil, nil, fmt.Errorf("end %q is not hex: %w", p.End, err)
	}
	return start, end, nil
}
