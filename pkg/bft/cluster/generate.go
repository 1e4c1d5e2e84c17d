package cluster

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/augustus-db/augustus/pkg/bft/auth"
	"github.com/augustus-db/augustus/pkg/bft/internal/quorum"
)

// Port layout of Generate. Replicas are numbered k = 0, 1, ... in group
// order, then index order (g0r0, g0r1, ..., g1r0, ...); replica k gets three
// consecutive ports from BasePort + PortsPerReplica*k:
//
//	peer    BasePort + 3k      (replica-to-replica)
//	client  BasePort + 3k + 1  (clients)
//	metrics BasePort + 3k + 2  (Prometheus /metrics)
//
// Two groups of four replicas from port 7000 use 7000..7023.
const PortsPerReplica = 3

// GenerateOptions describes a cluster for Generate.
type GenerateOptions struct {
	// Dir receives cluster.json and keys/; it is created if needed and
	// must not hold a cluster.json already.
	Dir string
	// ClusterID names the cluster; empty picks a random id.
	ClusterID string
	// Groups is the number of replica groups, at least 1 and at most 256
	// (the initial partitions split the first key byte).
	Groups int
	// F is the number of faults each group tolerates; groups have 3F+1
	// replicas.
	F int
	// BasePort is the first port of the layout above.
	BasePort int
	// Host is the host of every address; empty means 127.0.0.1.
	Host string
	// Clients is the number of client key pairs to create (client0, ...).
	Clients int
	// ClientPolicy is "listed" (the default when empty) or "open".
	ClientPolicy string
	// Admins is the number of admin key pairs to create (admin0, ...):
	// the keys that may change metadata (txn.md M5).
	Admins int
	// SQLRoot says which SQL account root the cluster gets (sqlusers.go):
	// none, one with a generated password written to
	// keys/sql-root.password, or one without a password.
	SQLRoot SQLRootMode
}

// DefaultGenerateOptions returns the local demo cluster of DESIGN.md §1:
// two groups of four replicas (f=1) on loopback from port 7000, one listed
// client and one admin.
func DefaultGenerateOptions(dir string) GenerateOptions {
	return GenerateOptions{Dir: dir, Groups: 2, F: 1, BasePort: 7000, Host: "127.0.0.1", Clients: 1, ClientPolicy: PolicyListed, Admins: 1}
}

// ReplicaName returns the name Generate gives replica index of group g.
func ReplicaName(g, index uint32) string { return fmt.Sprintf("g%dr%d", g, index) }

// ClientName returns the name Generate gives client i.
func ClientName(i int) string { return fmt.Sprintf("client%d", i) }

// KeyPath returns the path of the private key file of name in a cluster
// directory: <dir>/keys/<name>.key.
func KeyPath(dir, name string) string { return filepath.Join(dir, KeysDir, name+".key") }

// Generate creates a cluster: fresh Ed25519 keys for every replica and
// client, written to <Dir>/keys/<name>.key (mode 0600, directory 0700), and
// the cluster file <Dir>/cluster.json, written last, so a directory with a
// cluster.json is complete. Ports follow the layout of PortsPerReplica;
// the initial partition map splits the key space into Groups equal ranges by
// the first key byte. It never overwrites a key or a cluster file.
func Generate(opts GenerateOptions) (*Cluster, error) {
	// build's errors wrap this package's sentinels (whose messages start
	// with "cluster:") or say "cluster: generate:" themselves.
	c, keys, password, err := build(opts)
	if err != nil {
		return nil, err
	}
	if err := write(opts.Dir, c, keys, password); err != nil {
		return nil, fmt.Errorf("cluster: generate in %s: %w", opts.Dir, err)
	}
	return c, nil
}

type namedKey struct {
	name string
	priv ed25519.PrivateKey
}

// build makes the cluster and its keys in memory; password is the SQL
// root's generated password, if any.
func build(opts GenerateOptions) (c *Cluster, keys []namedKey, password string, err error) {
	c, keys, err = buildKeys(opts)
	if err != nil {
		return nil, nil, "", err
	}
	root, password, err := sqlRoot(opts.SQLRoot)
	if err != nil {
		return nil, nil, "", err
	}
	if root != nil {
		c.SQLUsers = append(c.SQLUsers, *root)
	}
	if err := c.Validate(); err != nil {
		return nil, nil, "", err
	}
	return c, keys, password, nil
}

// buildKeys makes the cluster's groups, clients, admins and keys.
func buildKeys(opts GenerateOptions) (*Cluster, []namedKey, error) {
	if opts.Dir == "" {
		return nil, nil, fmt.Errorf("%w: no directory given", ErrBadParameter)
	}
	if opts.Groups < 1 || opts.Groups > 256 {
		return nil, nil, fmt.Errorf("%w: %d groups: want 1..256", ErrBadParameter, opts.Groups)
	}
	if opts.F < 0 || opts.F > (quorum.MaxReplicas-1)/3 {
		return nil, nil, fmt.Errorf("%w: f=%d: want 0 <= f and 3f+1 <= %d", ErrBadParameter, opts.F, quorum.MaxReplicas)
	}
	if opts.Clients < 0 {
		return nil, nil, fmt.Errorf("%w: %d clients", ErrBadParameter, opts.Clients)
	}
	if opts.Admins < 0 {
		return nil, nil, fmt.Errorf("%w: %d admins", ErrBadParameter, opts.Admins)
	}
	n := 3*opts.F + 1
	last := opts.BasePort + PortsPerReplica*opts.Groups*n - 1
	if opts.BasePort < 1 || opts.BasePort > 65535 || last > 65535 {
		return nil, nil, fmt.Errorf("%w: base port %d: %d group(s) of %d replicas need ports %d..%d, within 1..65535",
			ErrBadParameter, opts.BasePort, opts.Groups, n, opts.BasePort, last)
	}
	host := strings.TrimSuffix(strings.TrimPrefix(opts.Host, "["), "]")
	if host == "" {
		host = "127.0.0.1"
	}
	policy := opts.ClientPolicy
	if policy == "" {
		policy = PolicyListed
	}
	id := opts.ClusterID
	if id == "" {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, nil, fmt.Errorf("cluster: generate: cluster id: %w", err)
		}
		id = "augustus-" + hex.EncodeToString(b[:])
	}

	c := &Cluster{ClusterID: id, F: opts.F, ClientPolicy: policy}
	c.SetDefaults()
	var keys []namedKey
	port := opts.BasePort
	addr := func() string {
		a := net.JoinHostPort(host, strconv.Itoa(port)) // brackets IPv6 literals
		port++
		return a
	}
	for g := range opts.Groups {
		grp := Group{ID: uint32(g)}
		for i := range n {
			priv, err := auth.GenerateKey()
			if err != nil {
				return nil, nil, fmt.Errorf("cluster: generate: %w", err)
			}
			name := ReplicaName(uint32(g), uint32(i))
			keys = append(keys, namedKey{name, priv})
			grp.Replicas = append(grp.Replicas, Replica{
				Name:        name,
				Index:       uint32(i),
				PeerAddr:    addr(),
				ClientAddr:  addr(),
				MetricsAddr: addr(),
				PublicKey:   auth.EncodePublicKey(auth.PublicKeyOf(priv)),
			})
		}
		c.Groups = append(c.Groups, grp)
	}
	for i := range opts.Clients {
		priv, err := auth.GenerateKey()
		if err != nil {
			return nil, nil, fmt.Errorf("cluster: generate: %w", err)
		}
		name := ClientName(i)
		keys = append(keys, namedKey{name, priv})
		c.Clients = append(c.Clients, Client{Name: name, PublicKey: auth.EncodePublicKey(auth.PublicKeyOf(priv))})
	}
	adminKeys, err := addAdmins(c, opts.Admins)
	if err != nil {
		return nil, nil, err
	}
	keys = append(keys, adminKeys...)
	c.Partitions = SplitFirstByte(opts.Groups)
	if err := c.Validate(); err != nil {
		return nil, nil, err
	}
	return c, keys, nil
}

// SplitFirstByte returns partitions that split the key space into g equal
// ranges by first key byte (1 <= g <= 256), owned by groups 0..g-1 in
// order: group j holds the keys whose first byte is in
// [floor(256j/g), floor(256(j+1)/g)); group 0 also holds the empty key.
func SplitFirstByte(g int) []Partition {
	ps := make([]Partition, g)
	for j := range g {
		ps[j].Group = uint32(j)
		if j > 0 {
			ps[j].Start = fmt.Sprintf("%02x", 256*j/g)
		}
		if j < g-1 {
			ps[j].End = fmt.Sprintf("%02x", 256*(j+1)/g)
		}
	}
	return ps
}

// write creates the directories, the key files, the SQL root's password
// file (if password is not empty) and then the cluster file.
func write(dir string, c *Cluster, keys []namedKey, password string) error {
	clusterFile := filepath.Join(dir, FileName)
	if _, err := os.Lstat(clusterFile); err == nil {
		return fmt.Errorf("%s exists; refusing to overwrite a cluster: %w", clusterFile, fs.ErrExist)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := mkdirSynced(dir, 0o755); err != nil {
		return err
	}
	keysDir := filepath.Join(dir, KeysDir)
	if err := mkdirSynced(keysDir, 0o700); err != nil {
		return err
	}
	for _, k := range keys {
		if err := auth.WritePrivateKeyFile(KeyPath(dir, k.name), k.priv); err != nil {
			return err
		}
	}
	if password != "" {
		if err := writePasswordFile(SQLRootPasswordPath(dir), password); err != nil {
			return err
		}
	}
	// c is valid (build checked it): only writing can fail here, and its
	// errors are the operating system's, wrapped once by Generate.
	data, err := c.Marshal()
	if err != nil {
		return err
	}
	return writeFileAtomic(clusterFile, data, 0o644)
}

// mkdirSynced creates dir (and parents) if needed and syncs the parent of
// every directory it created, so the new entries survive a crash.
func mkdirSynced(dir string, perm os.FileMode) error {
	dir = filepath.Clean(dir)
	if fi, err := os.Stat(dir); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a directory", dir)
		}
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := mkdirSynced(parent, 0o755); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, perm); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return auth.SyncDir(parent)
}
