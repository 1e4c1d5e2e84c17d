package host

import (
	"crypto/ed25519"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/auth"
	"github.com/augustus-db/augustus/pkg/bft/bftpb"
	"github.com/augustus-db/augustus/pkg/bft/envelope"
	"github.com/augustus-db/augustus/pkg/storage"
)

// recNet records what the loop hands to the network, in order.
type recNet struct{ out []string }

func (n *recNet) Send(to bft.ReplicaID, m *bftpb.Message) {
	n.out = append(n.out, fmt.Sprintf("send %d %s %x", to, bftpb.KindName(m), marshal(m)))
}

func (n *recNet) Broadcast(m *bftpb.Message) {
	n.out = append(n.out, fmt.Sprintf("broadcast %s %x", bftpb.KindName(m), marshal(m)))
}

func (n *recNet) Reply(rep *bftpb.Reply, _ [][]byte) {
	n.out = append(n.out, fmt.Sprintf("reply %x", marshal(rep)))
}

func marshal(m proto.Message) []byte {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

// recExec holds submitted jobs until the test runs them.
type recExec struct{ jobs []*Job }

func (e *recExec) Submit(j *Job) { e.jobs = append(e.jobs, j) }

// take removes and returns the submitted jobs.
func (e *recExec) take() []*Job {
	j := e.jobs
	e.jobs = nil
	return j
}

type testLoop struct {
	*Loop
	fs      *vfs.MemFS
	engine  *storage.Engine
	net     *recNet
	exec    *recExec
	metrics *storage.Metrics
}

func testSigner(t *testing.T, i int) *auth.Signer {
	t.Helper()
	var seed [ed25519.SeedSize]byte
	seed[0] = byte(i + 1)
	s, err := auth.NewSigner(ed25519.NewKeyFromSeed(seed[:]))
	require.NoError(t, err)
	return s
}

// newTestLoop builds replica id of a group of 4 (f=1) on a crashable
// in-memory store; noSync selects durability mode "none".
func newTestLoop(t *testing.T, id bft.ReplicaID, noSync bool) *testLoop {
	t.Helper()
	fs := vfs.NewCrashableMem()
	m := storage.NewMetrics(nil)
	e, err := storage.Open("replica", storage.Options{FS: fs, NoSync: noSync, Metrics: m})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	cfg := bft.DefaultConfig(id, 1)
	cfg.ClusterID, cfg.Group, cfg.Signer = "test", 0, testSigner(t, int(id))
	tl := &testLoop{fs: fs, engine: e, net: &recNet{}, exec: &recExec{}, metrics: m}
	tl.Loop, err = New(Config{Core: cfg, Engine: e, App: NoopApp{}, Net: tl.net, Exec: tl.exec})
	require.NoError(t, err)
	require.NoError(t, tl.Process())
	return tl
}

// runJobs runs every submitted job and reports it, until none is left.
func (tl *testLoop) runJobs(t *testing.T) {
	t.Helper()
	for len(tl.exec.jobs) > 0 {
		for _, j := range tl.exec.take() {
			require.NoError(t, tl.Finished(tl.RunExecutions(j)))
			require.NoError(t, tl.Process())
		}
	}
}

// logRecords returns the keys of the log records a power cut now would
// leave in the store.
func (tl *testLoop) durableRecords(t *testing.T) int {
	t.Helper()
	e, err := storage.Open("replica", storage.Options{FS: tl.fs.CrashClone(vfs.CrashCloneCfg{}), ReadOnly: true})
	require.NoError(t, err)
	defer e.Close()
	n := 0
	require.NoError(t, e.Scan(storage.BFTState, []byte{prefixLog}, []byte{prefixLog + 1}, 0, func(_, _ []byte) error {
		n++
		return nil
	}))
	return n
}

var testClient = bft.ClientID(make([]byte, ed25519.PublicKeySize))

func testRequest(ts uint64) *bftpb.Request {
	return &bftpb.Request{Client: []byte(testClient), Timestamp: ts, Payload: envelope.EncodeCalls([][]byte{fmt.Appendf(nil, "call %d", ts)})}
}

// pbft.md P1: a message leaves only after a WAL sync covers the persist of
// its round, and the sync job is what makes the record durable. Before the
// sync a power cut loses the PRE-PREPARE record and the PRE-PREPARE with it.
func TestP1_MessagesWaitForTheSyncThatCoversTheirPersist(t *testing.T) {
	tl := newTestLoop(t, 0, false)
	tl.Propose(testRequest(1))
	require.NoError(t, tl.Process())
	require.Empty(t, tl.net.out, "nothing leaves before the sync")
	require.Zero(t, tl.durableRecords(t), "the PRE-PREPARE record is committed, not synced")
	jobs := tl.exec.take()
	require.Len(t, jobs, 1)
	require.True(t, jobs[0].Sync)

	res := tl.RunExecutions(jobs[0])
	require.NoError(t, res.Err)
	require.Equal(t, 1, tl.durableRecords(t), "the sync made the record durable")
	require.Empty(t, tl.net.out, "the loop has not heard of the sync yet")
	require.NoError(t, tl.Finished(res))
	require.Len(t, tl.net.out, 1)
	require.Contains(t, tl.net.out[0], "broadcast pre-prepare")
}

// A failed sync is a local fault: the replica stops and sends nothing that
// depends on it.
func TestFailedSyncStopsTheReplicaWithoutSending(t *testing.T) {
	tl := newTestLoop(t, 0, false)
	tl.Propose(testRequest(1))
	require.NoError(t, tl.Process())
	jobs := tl.exec.take()
	require.Len(t, jobs, 1)
	err := tl.Finished(&JobResult{Job: jobs[0], Err: fmt.Errorf("disk on fire")})
	require.ErrorContains(t, err, "disk on fire")
	require.Empty(t, tl.net.out)
}

// Group commit: while a sync is out, the primary holds requests and cuts
// them into one batch when the sync finishes; one sync covers it. Without
// the hold, each request would be its own batch.
func TestPrimaryCutsOneBatchOfTheRequestsThatArriveDuringASync(t *testing.T) {
	tl := newTestLoop(t, 0, false)
	tl.Propose(testRequest(1))
	require.NoError(t, tl.Process())
	first := tl.exec.take()
	for ts := uint64(2); ts <= 5; ts++ {
		tl.Propose(testRequest(ts))
		require.NoError(t, tl.Process())
	}
	require.Empty(t, tl.exec.jobs, "one sync out at a time")
	require.NoError(t, tl.Finished(tl.RunExecutions(first[0])))
	require.NoError(t, tl.Process())
	require.Len(t, tl.net.out, 1, "the first batch left")
	second := tl.exec.take()
	require.Len(t, second, 1, "the held requests' batch waits for the next sync")
	require.NoError(t, tl.Finished(tl.RunExecutions(second[0])))
	require.Len(t, tl.net.out, 2)
	m := &bftpb.Message{}
	require.NoError(t, proto.Unmarshal(lastMessageBytes(t, tl.net.out[1]), m))
	require.Len(t, m.GetPrePrepare().GetBatch().GetRequests(), 4, "the four held requests in one batch")
	require.Equal(t, 2, tl.Syncs())
}

func lastMessageBytes(t *testing.T, line string) []byte {
	t.Helper()
	var kind string
	var b []byte
	_, err := fmt.Sscanf(line, "broadcast %s %x", &kind, &b)
	require.NoError(t, err)
	return b
}

// drive runs replica 0 (the primary) through requests, the backups'
// PREPAREs and COMMITs, and executions, completing every job at once, and
// returns what it sent.
func drive(t *testing.T, tl *testLoop) []string {
	t.Helper()
	for ts := uint64(1); ts <= 3; ts++ {
		tl.Propose(testRequest(ts))
		require.NoError(t, tl.Process())
		tl.runJobs(t)
		// The PRE-PREPARE just broadcast.
		m := &bftpb.Message{}
		require.NoError(t, proto.Unmarshal(lastMessageBytes(t, tl.net.out[len(tl.net.out)-1]), m))
		pp := m.GetPrePrepare()
		require.NotNil(t, pp)
		for _, from := range []uint32{1, 2} {
			p := &bftpb.Prepare{View: pp.View, Seq: pp.Seq, Digest: pp.Digest, Replica: from}
			p.Signature = testSigner(t, int(from)).Sign([]byte("not checked by the node"))
			tl.Deliver(&bftpb.Message{From: from, Body: &bftpb.Message_Prepare{Prepare: p}})
			require.NoError(t, tl.Process())
		}
		tl.runJobs(t)
		for _, from := range []uint32{1, 2} {
			c := &bftpb.Commit{View: pp.View, Seq: pp.Seq, Digest: pp.Digest, Replica: from}
			c.Signature = testSigner(t, int(from)).Sign([]byte("not checked by the node"))
			tl.Deliver(&bftpb.Message{From: from, Body: &bftpb.Message_Commit{Commit: c}})
			require.NoError(t, tl.Process())
		}
		tl.runJobs(t)
	}
	require.EqualValues(t, 3, tl.Node().LastExecuted())
	return tl.net.out
}

// Durability mode "none" never changes what is sent, only whether the log
// is synced: the same events give the same messages and replies, in the
// same order, with the same sync jobs — and no fsync of the WAL.
func TestSyncNoneSendsWhatFsyncSends(t *testing.T) {
	fsync := newTestLoop(t, 0, false)
	none := newTestLoop(t, 0, true)
	fsyncsBefore := testutil.ToFloat64(fsync.metrics.Fsyncs)
	noneBefore := testutil.ToFloat64(none.metrics.Fsyncs)

	sentFsync := drive(t, fsync)
	sentNone := drive(t, none)
	require.Equal(t, sentFsync, sentNone)
	require.NotEmpty(t, sentFsync)
	replies := 0
	for _, s := range sentFsync {
		if s[:5] == "reply" {
			replies++
		}
	}
	require.Equal(t, 3, replies, "the requests were executed and answered")
	require.Equal(t, fsync.Syncs(), none.Syncs())
	require.GreaterOrEqual(t, testutil.ToFloat64(fsync.metrics.Fsyncs)-fsyncsBefore, float64(fsync.Syncs()), "one WAL fsync per sync job at least")
	require.Zero(t, testutil.ToFloat64(none.metrics.Fsyncs)-noneBefore, "no fsync in mode none")
}

// Replies wait for the sync of the replica's own COMMIT, which they count
// towards N6 (P1), and for nothing more: the batch executes before that sync
// and its execution needs no sync of its own (durable.go: a power cut loses
// only executions that are redone from the durable log).
func TestP1_RepliesWaitForTheSyncOfTheOwnCommitNotOfTheExecution(t *testing.T) {
	tl := newTestLoop(t, 0, false)
	tl.Propose(testRequest(1))
	require.NoError(t, tl.Process())
	tl.runJobs(t)
	m := &bftpb.Message{}
	require.NoError(t, proto.Unmarshal(lastMessageBytes(t, tl.net.out[0]), m))
	pp := m.GetPrePrepare()
	for _, from := range []uint32{1, 2} {
		tl.Deliver(&bftpb.Message{From: from, Body: &bftpb.Message_Prepare{Prepare: &bftpb.Prepare{View: pp.View, Seq: pp.Seq, Digest: pp.Digest, Replica: from}}})
		require.NoError(t, tl.Process())
	}
	// Prepared: the COMMIT is persisted, its sync out.
	commitSync := tl.exec.take()
	require.Len(t, commitSync, 1)
	for _, from := range []uint32{1, 2} {
		tl.Deliver(&bftpb.Message{From: from, Body: &bftpb.Message_Commit{Commit: &bftpb.Commit{View: pp.View, Seq: pp.Seq, Digest: pp.Digest, Replica: from}}})
		require.NoError(t, tl.Process())
	}
	execJobs := tl.exec.take()
	require.Len(t, execJobs, 1, "committed: the batch executes before the COMMIT is durable")
	require.NoError(t, tl.Finished(tl.RunExecutions(execJobs[0])))
	require.NoError(t, tl.Process())
	for _, s := range tl.net.out {
		require.NotContains(t, s, "reply", "no reply before the own COMMIT is durable")
	}
	require.NoError(t, tl.Finished(tl.RunExecutions(commitSync[0])))
	require.Contains(t, tl.net.out[len(tl.net.out)-1], "reply", "the COMMIT's sync releases the reply")
	require.NoError(t, tl.Process())
	require.Empty(t, tl.exec.jobs, "no sync for the execution")
}
