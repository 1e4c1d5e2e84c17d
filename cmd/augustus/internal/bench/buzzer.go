package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"

	"github.com/augustus-db/augustus/pkg/txn"
	"github.com/augustus-db/augustus/pkg/txn/coord"
	"github.com/augustus-db/augustus/pkg/txn/txntest/history"
)

// Buzzer (--workload buzzer): the Twitter-like service of the paper's
// §4.4, on the transaction client. Three operations, in the paper's Mix
// (--mix, default timeline 85 %, post 7.5 %, follow 7.5 %):
//
//   - post: one insert of a post under the poster's key, a single-group
//     update;
//   - follow: two inserts, one in the follower's list of friends (whom
//     they follow) and one in the followee's list of followers: at worst
//     a two-group update;
//   - timeline: a read-only transaction that reads the user's friends
//     (one read-range, in the user's group), then one that reads the most
//     recent posts of each friend (a read-range per friend, limited to
//     buzzerPostsPerFriend posts): a multi-group read. The pair counts as
//     one transaction.
//
// Range partitioning by user, as the paper describes: every key of a user
// starts with the user's 4-byte key, the users are spread evenly over the
// key space (keySpace, as A–D's items), so each group holds an equal,
// contiguous share of the users and everything of a user lives in one
// group; posts and follows of one user are single-group, and a user's
// friends or posts are one read-range in one group. The keys, after the
// user's 4 bytes and "$bz" (so they never meet the A–D items, 4 bytes, or
// the bank's accounts, "$acct"):
//
//	a                   the account
//	f <followee:4>      a friend (whom the user follows)
//	r <follower:4>      a follower
//	p <^micros:8> <w:4> a post: the time inverted, so a read-range
//	                    yields the most recent first; w is the writing
//	                    client key's tag, so posts of two bench processes
//	                    never collide
//
// The social graph is the paper's: --items users (default 100,000, the
// paper's), each following 1 to 20 others drawn uniformly, the number of
// followees Zipf-distributed with skew 1 over 1..20 ("a Zipf distribution
// with a size of 20 and a skew of 1, shifted by one": 58 % of the users
// follow up to 4 and 95.6 % up to 17, the paper's "50 %" and "95 %"). It
// is generated from a fixed seed, so
// every process sees the same graph: --load inserts it (accounts, friends
// and followers), a later process knows which follows exist without
// reading them. As in the paper, post and follow need no load; timeline
// does (a user without friends counts as an absent read: not loaded).

// Buzzer's constants.
const (
	buzzerDefaultUsers = 100_000
	// buzzerMaxFollows is the Zipf distribution's size.
	buzzerMaxFollows = 20
	// buzzerPostsPerFriend bounds the posts a timeline reads per friend:
	// the most recent ones.
	buzzerPostsPerFriend = 10
	// buzzerMaxFriends bounds the friends a timeline reads (the generated
	// graph gives at most 20; follows during runs add a few).
	buzzerMaxFriends = 1000
	// buzzerPostSize is a post's size unless --size says otherwise: a
	// tweet's 140 characters.
	buzzerPostSize = 140
	// buzzerGraphSeed seeds the social graph: the same in every process,
	// whatever --seed.
	buzzerGraphSeed = 0x6275_7a7a
	// buzzerSuffix follows every user's 4-byte key.
	buzzerSuffix = "$bz"
)

// Buzzer's operations.
const (
	opTimeline = "timeline"
	opPost     = "post"
	opFollow   = "follow"
)

const defaultBuzzerMix = "timeline=85,post=7.5,follow=7.5"

// buzzerFlags are buzzer's own flags.
type buzzerFlags struct {
	mix string
}

func (f *buzzerFlags) Check(workload string) error {
	if _, err := parseBuzzerMix(f.mix); err != nil {
		return err
	}
	if workload != "buzzer" && f.mix != defaultBuzzerMix {
		return fmt.Errorf("--mix %q: the mix of the buzzer workload: use --workload buzzer", f.mix)
	}
	return nil
}

// buzzerMix is the share of each operation, in thousandths: timeline, post,
// follow.
type buzzerMix [3]int

func parseBuzzerMix(s string) (buzzerMix, error) {
	var m buzzerMix
	bad := func(why string) (buzzerMix, error) {
		return buzzerMix{}, fmt.Errorf("--mix %q: %s (want e.g. %q)", s, why, defaultBuzzerMix)
	}
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		name, pct, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return bad("want operation=percent")
		}
		v, err := strconv.ParseFloat(pct, 64)
		if err != nil || v < 0 || v > 100 {
			return bad(fmt.Sprintf("%q is not a percentage", pct))
		}
		i := slices.Index([]string{opTimeline, opPost, opFollow}, name)
		if i < 0 || seen[name] {
			return bad(fmt.Sprintf("%q: the operations are timeline, post and follow, each once", name))
		}
		seen[name] = true
		m[i] = int(v*10 + 0.5)
	}
	if m[0]+m[1]+m[2] != 1000 {
		return bad("the percentages must add up to 100")
	}
	return m, nil
}

func init() {
	register(&Spec{
		Names: []string{"buzzer"}, Order: 50, Family: FamilyTxn,
		Help: `"buzzer" is the paper's Twitter-like service (§4.4) on a social graph of --items
users (default 100,000) range-partitioned by user, each following 1 to 20 others
(Zipf, skew 1): post (one insert), follow (two inserts, in the follower's and the
followee's groups) and timeline (the user's friends, then the 10 most recent
posts of each: a multi-group read), mixed by --mix (the paper's Mix: timeline
85 %, post 7.5 %, follow 7.5 %; "post=100" is its Post benchmark). --load
inserts the graph (accounts, friends, followers); post and follow need no load,
timeline does. The report splits latency and throughput by operation.
`,
		Example: `  augustus bench --dir ./c --workload buzzer --load --items 100000 --clients 32 --duration 20s`,
		Flags: func(fs *pflag.FlagSet) WorkloadFlags {
			f := &buzzerFlags{}
			fs.StringVar(&f.mix, "mix", defaultBuzzerMix, "buzzer: the share of each operation, in percent")
			return f
		},
		newTxn: func(env *txnEnv, _ string, f WorkloadFlags) (txnWorkload, error) {
			mix, err := parseBuzzerMix(f.(*buzzerFlags).mix)
			if err != nil {
				return nil, err
			}
			return &buzzer{env: env, mix: mix, writer: uint32(keyTag(env.c, env.key)), added: map[[2]int32]bool{}}, nil
		},
	})
}

// buzzer is the buzzer workload in one bench process.
type buzzer struct {
	env      *txnEnv
	mix      buzzerMix
	ks       *keySpace
	users    int
	postSize int
	graph    *socialGraph
	// writer tags this process's posts (the client key's tag, bank.go).
	writer uint32
	// clock is the last post time handed out (microseconds).
	clock atomic.Int64
	// added holds the follows this process sent (follower, followee), so
	// that no two follows of one pair are sent; a follow that certainly
	// failed is taken out again.
	mu    sync.Mutex
	added map[[2]int32]bool
}

func (w *buzzer) Setup(runs []RunConfig) error {
	e := w.env
	w.users = e.t.items
	if w.users == 0 {
		w.users = buzzerDefaultUsers
	}
	if w.users < 2 {
		return fmt.Errorf("--items %d: buzzer needs at least 2 users", w.users)
	}
	w.postSize = buzzerPostSize
	if e.o.size > 0 {
		w.postSize = e.o.size
	}
	var err error
	if w.ks, err = newKeySpace(e.pmap, w.users, 0, []byte(buzzerSuffix)); err != nil {
		return err
	}
	if err := w.checkUsersKeptTogether(); err != nil {
		return err
	}
	for _, rc := range runs {
		if rc.MultiGroupPct != 0 {
			return fmt.Errorf("--multi-group %d: the buzzer workload's operations span the groups of the users they touch (--mix sets the share of each)", rc.MultiGroupPct)
		}
		if rc.ByzantinePct > 0 && len(w.ks.groups) < 2 {
			return fmt.Errorf("--byzantine %d: Byzantine callers abandon follows between users of two groups: the cluster's users lie in %d group(s) (augustus init --groups 2)", rc.ByzantinePct, len(w.ks.groups))
		}
	}
	w.graph = newSocialGraph(w.users, buzzerGraphSeed)
	return nil
}

// checkUsersKeptTogether checks that no range of the partition map starts
// inside a user's keys: everything of a user must live in one group.
func (w *buzzer) checkUsersKeptTogether() error {
	for _, r := range w.env.pmap.Ranges() {
		s := r.Start
		if len(s) > 4+len(buzzerSuffix) && bytes.Equal(s[4:4+len(buzzerSuffix)], []byte(buzzerSuffix)) {
			return fmt.Errorf("the partition map starts a range at %x, inside a user's keys: buzzer needs a map that keeps each user's keys (4 bytes, then %q) in one range (augustus init writes one)", s, buzzerSuffix)
		}
	}
	return nil
}

func (w *buzzer) info() txnInfo {
	return txnInfo{shape: "social", items: w.users, valueSize: w.postSize}
}

func (w *buzzer) mixRow(rc RunConfig) string {
	return fmt.Sprintf("timeline %s%%, post %s%%, follow %s%% (%d users); %d%% Byzantine callers",
		permille(w.mix[0]), permille(w.mix[1]), permille(w.mix[2]), w.users, rc.ByzantinePct)
}

func permille(v int) string { return strconv.FormatFloat(float64(v)/10, 'f', -1, 64) }

// sampleOps is a post: the single-group transaction of the workload.
func (w *buzzer) sampleOps() []txn.Op {
	return []txn.Op{{Kind: txn.OpInsert, Key: w.postKey(0, 1<<50), Value: benchValue(w.postSize, 1)}}
}

// Keys.

func (w *buzzer) userKey(u int, kind byte, rest ...byte) []byte {
	k := w.ks.key(u)
	k = append(k, kind)
	return append(k, rest...)
}

func be32(v int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }

func (w *buzzer) accountKey(u int) []byte     { return w.userKey(u, 'a') }
func (w *buzzer) friendKey(u, v int) []byte   { return w.userKey(u, 'f', be32(int32(v))...) }
func (w *buzzer) followerKey(v, u int) []byte { return w.userKey(v, 'r', be32(int32(u))...) }

func (w *buzzer) postKey(u int, micros int64) []byte {
	k := w.userKey(u, 'p', binary.BigEndian.AppendUint64(nil, ^uint64(micros))...)
	return binary.BigEndian.AppendUint32(k, w.writer)
}

// span returns [userKey+kind, userKey+kind+1): every key of one kind of u.
func (w *buzzer) span(u int, kind byte) (start, end []byte) {
	return w.userKey(u, kind), w.userKey(u, kind+1)
}

// nextMicros hands out post times: the wall clock in microseconds, unique
// and increasing in this process.
func (w *buzzer) nextMicros() int64 {
	for {
		last := w.clock.Load()
		next := max(last+1, time.Now().UnixMicro())
		if w.clock.CompareAndSwap(last, next) {
			return next
		}
	}
}

// Load inserts the social graph: every user's account, friends and
// followers, in transactions of one group each (a run of users of one
// group), all groups at once.
func (w *buzzer) Load(ctx context.Context) (*LoadResult, error) {
	e := w.env
	batch := e.loadBatchSize(8)
	per := make([][]itemSpan, len(w.ks.groups))
	keys := 0
	for gi, spans := range w.ks.spans {
		for _, s := range spans {
			lo, n := s.lo, 0
			for u := s.lo; u < s.hi; u++ {
				k := w.graph.keysOf(u)
				keys += k
				if n > 0 && n+k > batch {
					per[gi] = append(per[gi], itemSpan{lo, u})
					lo, n = u, 0
				}
				n += k
			}
			per[gi] = append(per[gi], itemSpan{lo, s.hi})
		}
	}
	spans := interleave(per)
	st := w.graph.stats()
	fmt.Fprintf(e.stderr, "bench: loading the social graph: %d users following %d others in all (Zipf over 1..%d, median %d, 95th percentile %d): %d keys in %d transactions of up to %d inserts, %d in flight\n",
		st.Users, st.Follows, buzzerMaxFollows, st.FollowsP50, st.FollowsP95, keys, len(spans), batch, e.t.loadClients)
	units := make([]func() []txn.KV, len(spans))
	for i, s := range spans {
		units[i] = func() []txn.KV {
			var kvs []txn.KV
			for u := s.lo; u < s.hi; u++ {
				kvs = append(kvs, txn.KV{Key: w.accountKey(u), Value: []byte("user-" + strconv.Itoa(u))})
				for _, v := range w.graph.follows[u] {
					kvs = append(kvs, txn.KV{Key: w.friendKey(u, int(v)), Value: []byte{1}})
				}
				for _, f := range w.graph.followers[u] {
					kvs = append(kvs, txn.KV{Key: w.followerKey(u, int(f)), Value: []byte{1}})
				}
			}
			return kvs
		}
	}
	res, err := e.loadKVs(ctx, units, keys, "keys", batch)
	if res != nil {
		st.Keys = keys
		res.Graph = &st
	}
	return res, err
}

func (w *buzzer) NewCaller(rc RunConfig, i int) (Caller, error) {
	return &buzzerCaller{w: w, rng: rand.New(rand.NewPCG(w.env.seed, uint64(rc.ByzantinePct)<<32|uint64(i)))}, nil
}

func (w *buzzer) Classify(err error) (Class, string) { return classifyTxn(err) }

type buzzerCaller struct {
	w   *buzzer
	rng *rand.Rand
}

func (c *buzzerCaller) Do(ctx context.Context) Outcome {
	w := c.w
	switch c.draw() {
	case opTimeline:
		return w.timeline(ctx, c.rng.IntN(w.users))
	case opPost:
		return w.post(ctx, c.rng.IntN(w.users))
	default:
		return w.follow(ctx, c.rng)
	}
}

// draw draws the next operation by the mix.
func (c *buzzerCaller) draw() string {
	switch n := c.rng.IntN(1000); {
	case n < c.w.mix[0]:
		return opTimeline
	case n < c.w.mix[0]+c.w.mix[1]:
		return opPost
	}
	return opFollow
}

// post inserts a post of u; its text starts with its time (8 bytes,
// big-endian microseconds).
func (w *buzzer) post(ctx context.Context, u int) Outcome {
	micros := w.nextMicros()
	_, err := w.env.do(ctx, coord.Ops{{Kind: txn.OpInsert, Key: w.postKey(u, micros), Value: benchValue(w.postSize, uint64(micros))}}, coord.Options{})
	return Outcome{Err: err, Kind: opPost, Groups: 1}
}

// timeline reads u's friends, then the most recent posts of each.
func (w *buzzer) timeline(ctx context.Context, u int) Outcome {
	fs, fe := w.span(u, 'f')
	res, err := w.env.do(ctx, coord.Ops{{Kind: txn.OpReadRange, Key: fs, End: fe, Limit: buzzerMaxFriends}}, coord.Options{})
	if err != nil {
		return Outcome{Err: err, Kind: opTimeline}
	}
	friends := res.Ops[0].Entries
	if len(friends) == 0 {
		// Every user of the loaded graph follows someone.
		return Outcome{Kind: opTimeline, Groups: 1, Absent: 1}
	}
	ops := make(coord.Ops, 0, len(friends))
	for _, kv := range friends {
		v := int(binary.BigEndian.Uint32(kv.Key[len(kv.Key)-4:]))
		ps, pe := w.span(v, 'p')
		ops = append(ops, txn.Op{Kind: txn.OpReadRange, Key: ps, End: pe, Limit: buzzerPostsPerFriend})
	}
	res, err = w.env.do(ctx, ops, coord.Options{})
	groups := 0
	if res != nil {
		groups = len(res.Groups)
	}
	return Outcome{Err: err, Kind: opTimeline, Groups: groups}
}

// follow makes a user follow another they do not follow yet.
func (w *buzzer) follow(ctx context.Context, rng *rand.Rand) Outcome {
	u, v, ok := w.pickFollow(rng, -1)
	if !ok {
		// Every user drawn follows everyone (a tiny graph): nothing left
		// to follow; a timeline instead.
		return w.timeline(ctx, rng.IntN(w.users))
	}
	_, err := w.env.do(ctx, coord.Ops(w.followOps(u, v)), coord.Options{})
	if outcomeOf(err) == history.Fail {
		w.unmark(u, v) // certainly not followed: the pair may be drawn again
	}
	groups := 1
	if w.ks.groupIndex(u) != w.ks.groupIndex(v) {
		groups = 2
	}
	return Outcome{Err: err, Kind: opFollow, Groups: groups}
}

func (w *buzzer) followOps(u, v int) []txn.Op {
	return []txn.Op{
		{Kind: txn.OpInsert, Key: w.friendKey(u, v), Value: []byte{1}},
		{Kind: txn.OpInsert, Key: w.followerKey(v, u), Value: []byte{1}},
	}
}

// pickFollow draws a follower and someone they do not follow yet (in the
// generated graph or by this process), and marks the pair; with
// otherGroup >= 0 the followee is in a group of another index than the
// follower's, which is in group index otherGroup. It gives up after a few
// followers that follow everyone.
func (w *buzzer) pickFollow(rng *rand.Rand, otherGroup int) (u, v int, ok bool) {
	for range 16 {
		if otherGroup >= 0 {
			u = w.ks.nth(otherGroup, rng.IntN(w.ks.counts[otherGroup]))
		} else {
			u = rng.IntN(w.users)
		}
		// Random draws first; then a scan from a random start, so a user
		// who follows almost everyone still finds the rest.
		start := rng.IntN(w.users)
		for k := range w.users + 32 {
			if k < 32 {
				v = rng.IntN(w.users)
			} else {
				v = (start + k - 32) % w.users
			}
			if v == u || (otherGroup >= 0 && w.ks.groupIndex(v) == otherGroup) || w.graph.follows2(u, v) {
				continue
			}
			if w.mark(u, v) {
				return u, v, true
			}
		}
	}
	return 0, 0, false
}

func (w *buzzer) mark(u, v int) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := [2]int32{int32(u), int32(v)}
	if w.added[p] {
		return false
	}
	w.added[p] = true
	return true
}

func (w *buzzer) unmark(u, v int) {
	w.mu.Lock()
	delete(w.added, [2]int32{int32(u), int32(v)})
	w.mu.Unlock()
}

// abandonOps is a Byzantine caller's transaction: a follow between users
// of two groups.
func (w *buzzer) abandonOps(_ context.Context, bc *byzCaller) ([]txn.Op, bool) {
	gi := bc.rng.IntN(len(w.ks.groups))
	u, v, ok := w.pickFollow(bc.rng, gi)
	if !ok {
		return nil, false
	}
	return w.followOps(u, v), true
}

// socialGraph is the generated graph: whom each user follows, and who
// follows each user.
type socialGraph struct {
	follows, followers [][]int32
}

// zipfCDF is the Zipf distribution over 1..buzzerMaxFollows with skew 1:
// P(k) = (1/k) / H(20); zipfCDF[k-1] = P(K <= k).
var zipfCDF = func() []float64 {
	var h float64
	for k := 1; k <= buzzerMaxFollows; k++ {
		h += 1 / float64(k)
	}
	cdf := make([]float64, buzzerMaxFollows)
	var acc float64
	for k := 1; k <= buzzerMaxFollows; k++ {
		acc += 1 / float64(k) / h
		cdf[k-1] = acc
	}
	cdf[buzzerMaxFollows-1] = 1
	return cdf
}()

// drawFollows draws how many users one user follows.
func drawFollows(rng *rand.Rand) int {
	x := rng.Float64()
	k, _ := slices.BinarySearch(zipfCDF, x)
	return min(k+1, buzzerMaxFollows)
}

// newSocialGraph generates the graph of n users from seed: user u's
// followees come from a random source of its own (seed, u), so the graph
// does not depend on the order of generation.
func newSocialGraph(n int, seed uint64) *socialGraph {
	g := &socialGraph{follows: make([][]int32, n), followers: make([][]int32, n)}
	for u := range n {
		rng := rand.New(rand.NewPCG(seed, uint64(u)))
		k := min(drawFollows(rng), n-1)
		fs := make([]int32, 0, k)
		for len(fs) < k {
			v := int32(rng.IntN(n))
			if int(v) != u && !slices.Contains(fs, v) {
				fs = append(fs, v)
			}
		}
		slices.Sort(fs)
		g.follows[u] = fs
		for _, v := range fs {
			g.followers[v] = append(g.followers[v], int32(u))
		}
	}
	return g
}

// follows2 reports whether u follows v in the generated graph.
func (g *socialGraph) follows2(u, v int) bool {
	_, found := slices.BinarySearch(g.follows[u], int32(v))
	return found
}

// keysOf is the number of keys --load inserts for user u.
func (g *socialGraph) keysOf(u int) int { return 1 + len(g.follows[u]) + len(g.followers[u]) }

// GraphStats describes the social graph buzzer loaded.
type GraphStats struct {
	Users   int `json:"users"`
	Follows int `json:"follows"`
	// FollowsP50 and FollowsP95: half the users follow at most FollowsP50
	// others, 95 % at most FollowsP95 (3 and 17 for the paper's
	// distribution).
	FollowsP50 int `json:"follows_p50"`
	FollowsP95 int `json:"follows_p95"`
	MaxFollows int `json:"max_follows"`
	// Keys are the keys --load inserts: accounts, friends, followers.
	Keys int `json:"keys"`
}

func (g *socialGraph) stats() GraphStats {
	n := len(g.follows)
	counts := make([]int, n)
	st := GraphStats{Users: n}
	for u, fs := range g.follows {
		counts[u] = len(fs)
		st.Follows += len(fs)
	}
	slices.Sort(counts)
	if n > 0 {
		st.FollowsP50 = counts[(n-1)/2]
		st.FollowsP95 = counts[(n*95-1)/100]
		st.MaxFollows = counts[n-1]
	}
	return st
}
