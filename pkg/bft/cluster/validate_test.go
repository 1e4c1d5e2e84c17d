package cluster

import (
	"encoding/base64"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/bft/auth"
)

// validCluster returns a valid cluster of two groups of four replicas and
// two clients, built in memory.
func validCluster(t *testing.T) *Cluster {
	t.Helper()
	c, _, _, err := build(GenerateOptions{Dir: "unused", ClusterID: "test", Groups: 2, F: 1, BasePort: 7000, Clients: 2})
	require.NoError(t, err)
	require.NoError(t, c.Validate())
	return c
}

// requireProblem checks that Validate reports a problem of kind whose
// message contains msg.
func requireProblem(t *testing.T, c *Cluster, kind error, msg string) {
	t.Helper()
	err := c.Validate()
	require.Error(t, err)
	require.ErrorIs(t, err, ErrInvalid)
	require.ErrorIs(t, err, kind)
	require.ErrorContains(t, err, msg)
}

func TestValidateAcceptsAGeneratedCluster(t *testing.T) {
	require.NoError(t, validCluster(t).Validate())
}

func TestValidateRejectsWrongFForGroupSize(t *testing.T) {
	c := validCluster(t)
	c.F = 2
	requireProblem(t, c, ErrGroupSize, "group 0 has 4 replicas; f=2 needs exactly 3f+1 = 7 (4 replicas would fit f=1)")
}

func TestValidateRejectsAGroupOfTheWrongSize(t *testing.T) {
	c := validCluster(t)
	c.Groups[1].Replicas = c.Groups[1].Replicas[:3]
	requireProblem(t, c, ErrGroupSize, "group 1 has 3 replicas; f=1 needs exactly 3f+1 = 4")
}

func TestValidateRejectsNoGroups(t *testing.T) {
	c := validCluster(t)
	c.Groups = nil
	requireProblem(t, c, ErrGroupSize, "no groups")
}

func TestValidateRejectsReplicaIndexOutOfRange(t *testing.T) {
	c := validCluster(t)
	c.Groups[0].Replicas[3].Index = 4
	requireProblem(t, c, ErrGroupSize, `group 0 replica "g0r3" has index 4; indexes must be 0..3`)
}

func TestValidateRejectsDuplicateReplicaIndex(t *testing.T) {
	c := validCluster(t)
	c.Groups[0].Replicas[3].Index = 1
	requireProblem(t, c, ErrDuplicate, `group 0 replica "g0r3" has index 1, like group 0 replica "g0r1"`)
}

func TestValidateRejectsDuplicateGroupIDs(t *testing.T) {
	c := validCluster(t)
	c.Groups[1].ID = 0
	c.Partitions[1].Group = 0
	requireProblem(t, c, ErrDuplicate, "group id 0 appears twice")
}

func TestValidateRejectsDuplicateNames(t *testing.T) {
	c := validCluster(t)
	c.Groups[1].Replicas[2].Name = "g0r2"
	requireProblem(t, c, ErrDuplicate, `name "g0r2" is also used by group 0 replica "g0r2"`)

	c = validCluster(t)
	c.Clients[0].Name = "g1r0"
	requireProblem(t, c, ErrDuplicate, `name "g1r0" is also used by group 1 replica "g1r0"`)
}

func TestValidateRejectsNamesThatAreNotPlainFileNames(t *testing.T) {
	for _, name := range []string{"", "../g0r1", ".hidden", "a/b", "with space", "-dash"} {
		c := validCluster(t)
		c.Groups[0].Replicas[1].Name = name
		requireProblem(t, c, ErrBadName, "it names the key file")
	}
	c := validCluster(t)
	c.Clients[1].Name = "bad/name"
	requireProblem(t, c, ErrBadName, `client "bad/name": name`)
}

func TestValidateRejectsDuplicateAddressesAcrossTheCluster(t *testing.T) {
	cases := map[string]func(c *Cluster){
		"peer addresses in two groups": func(c *Cluster) { c.Groups[1].Replicas[0].PeerAddr = c.Groups[0].Replicas[0].PeerAddr },
		"client address on a metrics address": func(c *Cluster) {
			c.Groups[0].Replicas[1].ClientAddr = c.Groups[1].Replicas[2].MetricsAddr
		},
		"host names differing in case": func(c *Cluster) {
			c.Groups[0].Replicas[0].PeerAddr = "node-a:9000"
			c.Groups[0].Replicas[1].PeerAddr = "NODE-A:9000"
		},
		"spellings of one IPv6 address": func(c *Cluster) {
			c.Groups[0].Replicas[0].PeerAddr = "[::1]:9000"
			c.Groups[0].Replicas[1].PeerAddr = "[0:0::1]:9000"
		},
		"leading zeros in the port": func(c *Cluster) {
			c.Groups[0].Replicas[0].PeerAddr = "h:9000"
			c.Groups[0].Replicas[1].MetricsAddr = "h:09000"
		},
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			c := validCluster(t)
			mutate(c)
			requireProblem(t, c, ErrDuplicate, "is also used by")
		})
	}
}

func TestValidateRejectsMalformedAddresses(t *testing.T) {
	for _, addr := range []string{"7000", "host:", ":7000", "host:99999", "host:0", "host:http", "a b:7000", "[::1:7000", "host:7000:1"} {
		t.Run(addr, func(t *testing.T) {
			c := validCluster(t)
			c.Groups[1].Replicas[1].ClientAddr = addr
			requireProblem(t, c, ErrBadAddress, `group 1 replica "g1r1": client_addr`)
		})
	}
	c := validCluster(t)
	c.Groups[0].Replicas[0].PeerAddr = ""
	requireProblem(t, c, ErrBadAddress, "peer_addr is empty")
}

func TestValidateAllowsNoMetricsAddress(t *testing.T) {
	c := validCluster(t)
	for i := range c.Groups[0].Replicas {
		c.Groups[0].Replicas[i].MetricsAddr = ""
	}
	require.NoError(t, c.Validate())
}

func TestValidateRejectsMalformedPublicKeys(t *testing.T) {
	identity := make([]byte, 32)
	identity[0] = 1
	for name, key := range map[string]string{
		"not base64":  "***",
		"short":       base64.StdEncoding.EncodeToString(make([]byte, 16)),
		"small order": base64.StdEncoding.EncodeToString(identity),
		"empty":       "",
	} {
		t.Run(name, func(t *testing.T) {
			c := validCluster(t)
			c.Groups[0].Replicas[2].PublicKey = key
			requireProblem(t, c, ErrBadKey, `group 0 replica "g0r2": public_key`)
			require.ErrorIs(t, c.Validate(), auth.ErrMalformedKey)

			c = validCluster(t)
			c.Clients[0].PublicKey = key
			requireProblem(t, c, ErrBadKey, `client "client0": public_key`)
		})
	}
}

func TestValidateRejectsDuplicatePublicKeys(t *testing.T) {
	c := validCluster(t)
	c.Groups[1].Replicas[3].PublicKey = c.Groups[0].Replicas[0].PublicKey
	requireProblem(t, c, ErrDuplicate, `group 1 replica "g1r3": public_key is also the key of group 0 replica "g0r0"`)

	c = validCluster(t)
	c.Clients[1].PublicKey = c.Groups[0].Replicas[0].PublicKey
	requireProblem(t, c, ErrDuplicate, `client "client1": public_key is also the key of group 0 replica "g0r0"`)
}

func TestValidateRejectsOverlappingPartitions(t *testing.T) {
	c := validCluster(t)
	c.Partitions = []Partition{{Start: "", End: "90", Group: 0}, {Start: "80", End: "", Group: 1}}
	requireProblem(t, c, ErrBadPartitions, "overlap: partitions[0] and partitions[1] both hold key 80")

	c.Partitions = []Partition{{Start: "", End: "", Group: 0}, {Start: "80", End: "", Group: 1}}
	requireProblem(t, c, ErrBadPartitions, "overlap")

	c.Partitions = []Partition{{Start: "", End: "80", Group: 0}, {Start: "80", End: "", Group: 1}, {Start: "80", End: "90", Group: 1}}
	requireProblem(t, c, ErrBadPartitions, "overlap")
}

func TestValidateRejectsPartitionGaps(t *testing.T) {
	c := validCluster(t)
	c.Partitions = []Partition{{Start: "", End: "70", Group: 0}, {Start: "80", End: "", Group: 1}}
	requireProblem(t, c, ErrBadPartitions, "gap: keys from 70 to 80 belong to no partition")

	c.Partitions = []Partition{{Start: "00", End: "80", Group: 0}, {Start: "80", End: "", Group: 1}}
	requireProblem(t, c, ErrBadPartitions, "gap: keys below 00 belong to no partition")

	c.Partitions = []Partition{{Start: "", End: "80", Group: 0}, {Start: "80", End: "ff", Group: 1}}
	requireProblem(t, c, ErrBadPartitions, "gap: keys from ff up belong to no partition")

	c.Partitions = nil
	requireProblem(t, c, ErrBadPartitions, "no partitions")
}

func TestValidateRejectsPartitionsOfUnknownGroups(t *testing.T) {
	c := validCluster(t)
	c.Partitions[1].Group = 7
	requireProblem(t, c, ErrBadPartitions, "names unknown group 7")
}

func TestValidateRejectsMalformedPartitionBounds(t *testing.T) {
	c := validCluster(t)
	c.Partitions[1].Start = "8g"
	requireProblem(t, c, ErrBadPartitions, `start "8g" is not hex`)

	c = validCluster(t)
	c.Partitions[0].End = "8"
	requireProblem(t, c, ErrBadPartitions, `end "8" is not hex`)

	c = validCluster(t)
	c.Partitions = []Partition{{Start: "", End: "80", Group: 0}, {Start: "80", End: "80", Group: 1}, {Start: "80", End: "", Group: 1}}
	requireProblem(t, c, ErrBadPartitions, "partitions[1] is empty: start 80 is not below end 80")
}

func TestValidateAcceptsPartitionsInAnyOrder(t *testing.T) {
	c := validCluster(t)
	c.Partitions = []Partition{{Start: "c0", End: "", Group: 0}, {Start: "", End: "40", Group: 0}, {Start: "40", End: "c0", Group: 1}}
	require.NoError(t, c.Validate())
}

func TestValidateRejectsUnknownClientPolicy(t *testing.T) {
	for _, p := range []string{"", "Open", "all"} {
		c := validCluster(t)
		c.ClientPolicy = p
		requireProblem(t, c, ErrUnknownPolicy, "client_policy")
	}
}

func TestValidateRejectsAListedPolicyWithoutClients(t *testing.T) {
	c := validCluster(t)
	c.Clients = nil
	requireProblem(t, c, ErrBadParameter, `client_policy "listed" admits no client`)
	c.ClientPolicy = PolicyOpen
	require.NoError(t, c.Validate())
}

func TestValidateRejectsBadParameters(t *testing.T) {
	cases := map[string]struct {
		mutate func(c *Cluster)
		msg    string
	}{
		"empty cluster id":     {func(c *Cluster) { c.ClusterID = "" }, "cluster_id is empty"},
		"cluster id spaces":    {func(c *Cluster) { c.ClusterID = "my cluster" }, "printable ASCII"},
		"negative f":           {func(c *Cluster) { c.F = -1 }, "f=-1"},
		"f too large":          {func(c *Cluster) { c.F = 22 }, "3f+1 <= 64"},
		"f overflowing 3f+1":   {func(c *Cluster) { c.F = 1 << 62 }, "3f+1 <= 64"},
		"zero client window":   {func(c *Cluster) { c.ClientWindow = 0 }, "client_window=0"},
		"L not a multiple":     {func(c *Cluster) { c.LogWindow = 300 }, "log_window L=300 must be a multiple of checkpoint_interval K=128"},
		"L below 2K":           {func(c *Cluster) { c.LogWindow = 128 }, "at least 2K"},
		"zero checkpoint int.": {func(c *Cluster) { c.CheckpointInterval = 0 }, "K=0"},
		"unknown sync mode":    {func(c *Cluster) { c.Sync = "fdatasync" }, `sync "fdatasync": want "fsync" or "none"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := validCluster(t)
			tc.mutate(c)
			requireProblem(t, c, ErrBadParameter, tc.msg)
		})
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	c := validCluster(t)
	c.ClientPolicy = "nobody"
	c.Groups[0].Replicas[0].PeerAddr = "nope"
	c.Partitions[1].Group = 9
	err := c.Validate()
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	require.Len(t, ve.Problems, 3)
	require.ErrorIs(t, err, ErrUnknownPolicy)
	require.ErrorIs(t, err, ErrBadAddress)
	require.ErrorIs(t, err, ErrBadPartitions)
	require.ErrorContains(t, err, "3 problems:\n  - ")
}

func TestSplitFirstByteCoversTheKeySpace(t *testing.T) {
	for _, g := range []int{1, 2, 3, 7, 256} {
		c := validCluster(t)
		c.Groups = nil
		for i := range g {
			c.Groups = append(c.Groups, Group{ID: uint32(i)})
		}
		c.Partitions = SplitFirstByte(g)
		require.Len(t, c.Partitions, g)
		// Only the partition map is of interest here.
		err := c.Validate()
		var ve *ValidationError
		if err != nil {
			require.ErrorAs(t, err, &ve)
			for _, p := range ve.Problems {
				require.NotErrorIs(t, p, ErrBadPartitions, "g=%d", g)
			}
		}
	}
	require.Equal(t, []Partition{{Start: "", End: "55", Group: 0}, {Start: "55", End: "aa", Group: 1}, {Start: "aa", End: "", Group: 2}}, SplitFirstByte(3))
	require.Equal(t, []Partition{{Start: "", End: "", Group: 0}}, SplitFirstByte(1))
}

func TestPartitionBoundsDecodeHex(t *testing.T) {
	start, end, err := Partition{Start: "", End: "80"}.Bounds()
	require.NoError(t, err)
	require.Empty(t, start)
	require.Equal(t, []byte{0x80}, end)
	_, end, err = Partition{Start: "80ff", End: ""}.Bounds()
	require.NoError(t, err)
	require.Nil(t, end, "+inf")
}
