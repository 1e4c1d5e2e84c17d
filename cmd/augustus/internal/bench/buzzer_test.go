package bench

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/bft/cluster"
	"github.com/augustus-db/augustus/pkg/txn"
	"github.com/augustus-db/augustus/pkg/txn/coord"
	"github.com/augustus-db/augustus/pkg/txn/coord/coordtest"
)

// The paper's graph (§4.4): 100,000 users, each following 1 to 20 others,
// the number Zipf-distributed with skew 1, "50% of users followed up to
// four other users, and 95% of users followed up to 17"; nobody follows
// themselves or anyone twice, and the followers lists are the follows
// reversed.
func TestSocialGraphIsThePapers(t *testing.T) {
	const n = buzzerDefaultUsers
	g := newSocialGraph(n, buzzerGraphSeed)
	st := g.stats()
	require.Equal(t, n, st.Users)
	// P(K <= k) = H(k) / H(20): 58 % follow at most 4 (the paper's "50 %
	// up to four"; the median is 3, at 51 %) and 95.6 % at most 17.
	atMost := func(k int) float64 {
		c := 0
		for _, fs := range g.follows {
			if len(fs) <= k {
				c++
			}
		}
		return float64(c) / n
	}
	require.InDelta(t, 0.579, atMost(4), 0.01)
	require.InDelta(t, 0.956, atMost(17), 0.01)
	require.Equal(t, 3, st.FollowsP50)
	require.Equal(t, 17, st.FollowsP95)
	require.Equal(t, 20, st.MaxFollows)
	// The mean of Zipf(1..20, 1) is 20 / H(20) = 5.56.
	require.InDelta(t, 5.56, float64(st.Follows)/n, 0.05)
	followers := 0
	for u, fs := range g.follows {
		require.NotEmpty(t, fs, "user %d follows someone", u)
		require.True(t, slices.IsSorted(fs))
		require.Len(t, slices.Compact(slices.Clone(fs)), len(fs), "user %d follows nobody twice", u)
		require.NotContains(t, fs, int32(u))
		for _, v := range fs {
			require.Contains(t, g.followers[v], int32(u))
		}
		followers += len(g.followers[u])
	}
	require.Equal(t, st.Follows, followers)
	// The same graph in every process, whatever the order.
	a, b := newSocialGraph(500, buzzerGraphSeed), newSocialGraph(500, buzzerGraphSeed)
	require.Equal(t, a.follows, b.follows)
	require.NotEqual(t, a.follows, newSocialGraph(500, buzzerGraphSeed+1).follows)
	// A graph smaller than the Zipf's size: at most everyone else.
	for _, fs := range newSocialGraph(3, 7).follows {
		require.LessOrEqual(t, len(fs), 2)
	}
}

func TestBuzzerMixParsesThePapersMixes(t *testing.T) {
	m, err := parseBuzzerMix(defaultBuzzerMix)
	require.NoError(t, err)
	require.Equal(t, buzzerMix{850, 75, 75}, m)
	m, err = parseBuzzerMix("post=100")
	require.NoError(t, err)
	require.Equal(t, buzzerMix{0, 1000, 0}, m)
	for _, bad := range []string{"post=50", "tweet=100", "post=50,post=50", "post", "post=x", "post=-1,follow=101"} {
		_, err := parseBuzzerMix(bad)
		require.Error(t, err, bad)
	}
	require.ErrorContains(t, (&buzzerFlags{mix: "post=100"}).Check("A"), "use --workload buzzer")
	require.NoError(t, (&buzzerFlags{mix: defaultBuzzerMix}).Check("A"))
}

// The mix draws each operation in its share: the paper's Mix, 85 % of
// timelines, 7.5 % of posts and of follows.
func TestBuzzerCallerDrawsTheMix(t *testing.T) {
	c := &buzzerCaller{w: &buzzer{mix: buzzerMix{850, 75, 75}}, rng: rand.New(rand.NewPCG(1, 2))}
	counts := map[string]int{}
	for range 100_000 {
		counts[c.draw()]++
	}
	require.InDelta(t, 85_000, counts[opTimeline], 1000)
	require.InDelta(t, 7_500, counts[opPost], 500)
	require.InDelta(t, 7_500, counts[opFollow], 500)
}

// runBenchIn runs `augustus bench` with args against the in-process
// cluster in dir and returns the JSON report, the report and the error.
func runBenchIn(t *testing.T, dir string, args ...string) (TxnReport, string, error) {
	t.Helper()
	jsonPath := filepath.Join(t.TempDir(), "bench.json")
	fs := pflag.NewFlagSet("bench", pflag.ContinueOnError)
	o := AddFlags(fs, Defaults{PprofBasePort: 6060})
	require.NoError(t, fs.Parse(append(args, "--dir", dir, "--json", jsonPath, "--progress", "off")))
	var stdout, stderr strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := Run(ctx, &stdout, &stderr, o, Host{
		Version:     "augustus test",
		LoadCluster: func(dir string) (*cluster.Cluster, error) { return cluster.Load(filepath.Join(dir, cluster.FileName)) },
		PprofAddr:   func(*cluster.Cluster, string, int) string { return "127.0.0.1:1" },
	})
	t.Logf("stderr:\n%s\nstdout:\n%s", stderr.String(), stdout.String())
	var rep TxnReport
	data, rerr := os.ReadFile(jsonPath)
	require.NoError(t, rerr, "no JSON written: %v", err)
	require.NoError(t, json.Unmarshal(data, &rep))
	return rep, stdout.String(), err
}

// Buzzer against an in-process cluster of two groups (real replicas,
// PBFT, pebble; no metrics endpoints, so the CPU figures say why each
// replica is left out): --load inserts the paper's graph on 300 users, the
// Mix runs every operation, timelines read across both groups, and the
// store ends consistent: every friend entry has its follower entry (the
// two inserts of a follow commit together), the loaded graph is there,
// and a user's posts read most recent first. Byzantine callers abandon
// follows across the groups; the correct callers recover them.
func TestBuzzerAgainstAnInProcessCluster(t *testing.T) {
	cl := coordtest.Start(t, coordtest.Options{Groups: 2, Clients: 6})
	const users = 300
	// A mix richer in updates than the paper's, so that a short run
	// surely has posts and follows (TestBuzzerCallerDrawsTheMix checks the
	// draw).
	const mix = "timeline=50,post=25,follow=25"
	rep, out, err := runBenchIn(t, cl.Dir, "--workload", "buzzer", "--load", "--items", fmt.Sprint(users), "--settle-timeout", "0", "--mix", mix,
		"--clients", "5", "--duration", "1500ms", "--warmup", "200ms", "--byzantine", "0,40", "--byz-poll", "20ms", "--recovery-grace", "20ms")
	require.NoError(t, err)
	require.True(t, rep.OK, rep.Problems)
	require.Equal(t, "buzzer", rep.Workload)
	require.Equal(t, users, rep.Items)
	require.Equal(t, buzzerPostSize, rep.ValueSize)
	require.NotNil(t, rep.Load)
	g := newSocialGraph(users, buzzerGraphSeed)
	st := g.stats()
	require.Equal(t, &GraphStats{Users: users, Follows: st.Follows, FollowsP50: st.FollowsP50, FollowsP95: st.FollowsP95, MaxFollows: st.MaxFollows,
		Keys: users + 2*st.Follows}, rep.Load.Graph)
	require.Equal(t, int64(users+2*st.Follows), rep.Load.Inserted)
	require.Equal(t, "augustus test", rep.Version)
	require.NotEmpty(t, rep.Machine.GoVersion)
	require.Equal(t, "buzzer", rep.Config["workload"])
	require.Equal(t, mix, rep.Config["mix"])
	require.Len(t, rep.Runs, 2)
	r := rep.Runs[0]
	require.Positive(t, r.Committed)
	require.Zero(t, r.Errors, r.FirstError)
	require.Zero(t, r.AbsentReads)
	require.Positive(t, r.CommittedMulti, "timelines read the posts of friends in both groups")
	for _, k := range []string{opTimeline, opPost, opFollow} {
		require.Positive(t, r.ByKind[k].Committed, "%s: %+v", k, r.ByKind)
	}
	require.Equal(t, r.Committed, r.ByKind[opTimeline].Committed+r.ByKind[opPost].Committed+r.ByKind[opFollow].Committed)
	require.Equal(t, 8, r.Replicas)
	require.Len(t, r.ReplicasMissing, 8, "no metrics endpoints in-process")
	require.Contains(t, out, "left out: g1r3: no metrics_addr in cluster.json")
	require.Contains(t, out, "timeline 50%, post 25%, follow 25% (300 users)")
	byz := rep.Runs[1]
	require.Equal(t, 2, byz.ByzantineCallers)
	require.Positive(t, byz.Byzantine.Abandoned)
	require.Zero(t, byz.Byzantine.LeftUnfinished, "the clean-up finished every abandoned follow")

	// The store: every key of the workload, in one read of each group.
	ctx := t.Context()
	c, err := coord.NewClient(ctx, coord.ClientConfig{Cluster: cl.Cluster, Key: cl.ClientKey(5)})
	require.NoError(t, err)
	defer c.Close()
	res, err := c.Do(ctx, coord.Ops{{Kind: txn.OpReadRange, Key: []byte{1}, Limit: 10000}}, coord.Options{})
	require.NoError(t, err)
	require.False(t, res.Ops[0].More)
	// Pairs of user numbers (follower, followee); posts by user number.
	friends, followers := map[[2]uint32]bool{}, map[[2]uint32]bool{}
	posts := map[uint32][]uint64{}
	accounts := 0
	ks, err := newKeySpace(rangeMap(t, 2), users, 0, nil)
	require.NoError(t, err)
	user := map[uint32]uint32{} // a user's key -> its number
	for i := range users {
		user[binary.BigEndian.Uint32(ks.key(i))] = uint32(i)
	}
	for _, kv := range res.Ops[0].Entries {
		k := kv.Key
		require.True(t, bytes.Equal(k[4:7], []byte(buzzerSuffix)), "key %x", k)
		u, ok := user[binary.BigEndian.Uint32(k[:4])]
		require.True(t, ok, "key %x of no user", k)
		switch k[7] {
		case 'a':
			accounts++
		case 'f':
			friends[[2]uint32{u, binary.BigEndian.Uint32(k[8:])}] = true
		case 'r':
			followers[[2]uint32{binary.BigEndian.Uint32(k[8:]), u}] = true
		case 'p':
			// The post's time, from its text, in the order of the keys.
			require.Len(t, kv.Value, buzzerPostSize)
			posts[u] = append(posts[u], binary.BigEndian.Uint64(kv.Value))
		default:
			t.Fatalf("unknown key %x", k)
		}
	}
	require.Equal(t, users, accounts)
	require.Equal(t, friends, followers, "each follow inserted both of its keys, or neither")
	for u, fs := range g.follows {
		for _, v := range fs {
			require.True(t, friends[[2]uint32{uint32(u), uint32(v)}], "the loaded follow %d -> %d", u, v)
		}
	}
	require.Greater(t, len(friends), st.Follows, "the runs added follows")
	require.NotEmpty(t, posts)
	for u, ts := range posts {
		require.True(t, slices.IsSortedFunc(ts, func(a, b uint64) int { return cmp.Compare(b, a) }), "user %d's posts, most recent first: %v", u, ts)
	}
}

// A user's posts sort most recent first, inside the user's span of posts,
// so a read-range with a limit reads the latest ones; two writers' posts
// at the same microsecond differ.
func TestPostKeysSortMostRecentFirst(t *testing.T) {
	ks, err := newKeySpace(rangeMap(t, 2), 1000, 0, []byte(buzzerSuffix))
	require.NoError(t, err)
	w := &buzzer{ks: ks, writer: 7}
	u := 123
	start, end := w.span(u, 'p')
	var keys [][]byte
	for _, micros := range []int64{1, 2, 1 << 20, 1<<40 + 5, time.Now().UnixMicro()} {
		k := w.postKey(u, micros)
		require.True(t, bytes.Compare(k, start) >= 0 && bytes.Compare(k, end) < 0, "in the user's posts")
		keys = append(keys, k)
	}
	for i := 1; i < len(keys); i++ {
		require.Negative(t, bytes.Compare(keys[i], keys[i-1]), "a later post sorts first")
	}
	other := &buzzer{ks: ks, writer: 8}
	require.NotEqual(t, w.postKey(u, 5), other.postKey(u, 5))
	fs, fe := w.span(u, 'f')
	require.Negative(t, bytes.Compare(fe, start), "friends and posts do not overlap")
	require.Negative(t, bytes.Compare(fs, fe))
}
