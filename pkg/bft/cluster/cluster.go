package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/auth"
)

// FileName is the name of the cluster file inside a cluster directory.
const FileName = "cluster.json"

// KeysDir is the directory of private key files inside a cluster directory.
const KeysDir = "keys"

// Client policies (Cluster.ClientPolicy).
const (
	PolicyListed = auth.PolicyListed // only the clients of Cluster.Clients
	PolicyOpen   = auth.PolicyOpen   // any client with a well-formed key
)

// Cluster is the cluster file: everything the replicas, the group clients
// and the process tooling share. It is plain data; Validate checks it, and
// Load validates what it reads.
type Cluster struct {
	// ClusterID names the cluster; it is part of every signed byte string,
	// so signatures of one cluster mean nothing in another.
	ClusterID string `json:"cluster_id"`
	// F is the number of faulty replicas each group tolerates; every group
	// has exactly 3F+1 replicas.
	F int `json:"f"`
	// ClientWindow is W of pbft.md C2: envelopes a client may have
	// outstanding per group. Zero (or absent) means DefaultClientWindow.
	ClientWindow int `json:"client_window"`
	// CheckpointInterval is K (pbft.md G1); zero means the default.
	CheckpointInterval uint64 `json:"checkpoint_interval"`
	// LogWindow is L (pbft.md G2), a multiple of K and at least 2K; zero
	// means the default.
	LogWindow uint64 `json:"log_window"`
	// Groups are the replica groups.
	Groups []Group `json:"groups"`
	// Clients are the known clients; under the "listed" policy, the only
	// ones admitted.
	Clients []Client `json:"clients"`
	// Partitions is the initial range partition map: ranges that cover the
	// key space without overlap, each owned by one group.
	Partitions []Partition `json:"partitions"`
	// ClientPolicy is "listed" or "open".
	ClientPolicy string `json:"client_policy"`
	// Admins hold the keys that may write the metadata keyspace (txn.md
	// M5); see admin.go.
	Admins []Admin `json:"admins,omitempty"`
	// Sync is the replicas' durability mode: "fsync" (the default when
	// empty) syncs every replica's log before a message that depends on it
	// leaves (pbft.md P1), so the group survives a power cut of every
	// replica; "none" never syncs the log: a process crash loses nothing,
	// but a replica that loses power may lose its log's tail and then
	// counts as faulty, so the group survives power cuts of up to f
	// replicas at a time, not of the whole group. What is sent is the same
	// in both modes, only when it is synced differs.
	Sync string `json:"sync,omitempty"`
	// SQLUsers are the accounts of the MySQL gateway (sqlusers.go).
	SQLUsers []SQLUser `json:"sql_users,omitempty"`
}

// Durability modes (Cluster.Sync).
const (
	SyncFsync = "fsync"
	SyncNone  = "none"
)

// NoSync reports whether the replicas run in durability mode "none".
func (c *Cluster) NoSync() bool { return c.Sync == SyncNone }

// Group is one replica group of n = 3F+1 replicas.
type Group struct {
	ID       uint32    `json:"id"`
	Replicas []Replica `json:"replicas"`
}

// Replica is one member of a group.
type Replica struct {
	// Name identifies the replica in the cluster (e.g. "g0r1") and names
	// its key file, keys/<name>.key.
	Name string `json:"name"`
	// Index is the replica's bft.ReplicaID in its group: 0..n-1.
	Index uint32 `json:"index"`
	// PeerAddr (host:port) serves the replica-to-replica protocol.
	PeerAddr string `json:"peer_addr"`
	// ClientAddr (host:port) serves clients.
	ClientAddr string `json:"client_addr"`
	// MetricsAddr (host:port) serves Prometheus /metrics; empty disables it.
	MetricsAddr string `json:"metrics_addr,omitempty"`
	// PublicKey is the replica's Ed25519 public key, standard base64.
	PublicKey string `json:"public_key"`
}

// Client is a known client.
type Client struct {
	// Name identifies the client and names its key file, keys/<name>.key.
	Name string `json:"name"`
	// PublicKey is the client's Ed25519 public key, standard base64.
	PublicKey string `json:"public_key"`
}

// Partition is one range of the initial partition map: keys k with
// Start <= k < End (bytewise) belong to Group. Start and End are hex; Start
// "" is the empty key (the smallest) and End "" is +infinity.
type Partition struct {
	Start string `json:"start"`
	End   string `json:"end"`
	Group uint32 `json:"group"`
}

// Defaults, the same as bft.DefaultConfig's.
var (
	DefaultClientWindow       = int(bft.DefaultConfig(0, 1).ClientWindow)
	DefaultCheckpointInterval = uint64(bft.DefaultConfig(0, 1).CheckpointInterval)
	DefaultLogWindow          = uint64(bft.DefaultConfig(0, 1).LogWindow)
)

// SetDefaults fills the zero tunables (client window, checkpoint interval,
// log window, sync) with their defaults.
func (c *Cluster) SetDefaults() {
	if c.ClientWindow == 0 {
		c.ClientWindow = DefaultClientWindow
	}
	if c.CheckpointInterval == 0 {
		c.CheckpointInterval = DefaultCheckpointInterval
	}
	if c.LogWindow == 0 {
		c.LogWindow = DefaultLogWindow
	}
	if c.Sync == "" {
		c.Sync = SyncFsync
	}
}

// N returns the size of every group, 3F+1.
func (c *Cluster) N() int { return 3*c.F + 1 }

// maxFileSize bounds a cluster file.
const maxFileSize = 16 << 20

// Load reads, defaults and validates a cluster file. Errors about the
// file's contents wrap ErrInvalid and name the file once, after the
// sentinel's prefix ("cluster: invalid cluster: PATH: ..."), so a caller
// that adds its own context does not repeat "cluster:".
func Load(path string) (*Cluster, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cluster: load: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("cluster: load %s: %w", path, err)
	}
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("%w: %s: larger than %d bytes", ErrInvalid, path, maxFileSize)
	}
	return parse(data, path)
}

// Parse decodes, defaults and validates the contents of a cluster file.
// Unknown fields are errors, so a misspelt field is not silently ignored.
func Parse(data []byte) (*Cluster, error) { return parse(data, "") }

// parse is Parse for the file named source ("" if unnamed): its errors
// name it.
func parse(data []byte, source string) (*Cluster, error) {
	where := ""
	if source != "" {
		where = source + ": "
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var c Cluster
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("%w: %s%s%w", ErrInvalid, where, jsonPosition(data, err), err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: %sunexpected data after the JSON object", ErrInvalid, where)
	}
	c.SetDefaults()
	if err := c.Validate(); err != nil {
		var ve *ValidationError
		if errors.As(err, &ve) {
			ve.File = source
		}
		return nil, err
	}
	return &c, nil
}

// jsonPosition returns "line L, column C: " for JSON errors that carry an
// offset, and "" for others.
func jsonPosition(data []byte, err error) string {
	var offset int64 = -1
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		offset = syn.Offset
	case errors.As(err, &typ):
		offset = typ.Offset
	}
	if offset < 0 || offset > int64(len(data)) {
		return ""
	}
	line := 1 + bytes.Count(data[:offset], []byte("\n"))
	col := offset - int64(bytes.LastIndexByte(data[:offset], '\n'))
	return fmt.Sprintf("line %d, column %d: ", line, col)
}

// Marshal validates c and returns its cluster-file encoding.
func (c *Cluster) Marshal() ([]byte, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("cluster: marshal: %w", err)
	}
	return append(data, '\n'), nil
}

// Save validates c and writes it to path atomically: a temporary file in the
// same directory is written and synced, renamed over path, and the directory
// synced, so a crash leaves the old file or the new one, never a mix. The
// file is mode 0644: it holds only public keys.
func (c *Cluster) Save(path string) error {
	data, err := c.Marshal()
	if err != nil {
		// Marshal's errors carry the package prefix already: name the file
		// without repeating it.
		var ve *ValidationError
		if errors.As(err, &ve) {
			ve.File = path
		}
		return err
	}
	if err := writeFileAtomic(path, data, 0o644); err != nil {
		return fmt.Errorf("cluster: save %s: %w", path, err)
	}
	return nil
}

func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmpName := tmp.Name()
	renamed := false
	defer func() {
		if !renamed {
			_ = os.Remove(tmpName)
		}
	}()
	if err := tmp.Chmod(perm); err != nil {
		_ = tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmpName, path); err != nil {
		return err
	}
	renamed = true
	return auth.SyncDir(dir)
}
