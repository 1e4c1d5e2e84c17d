package bft

// This file is the stateless half of accepting a message. Everything here
// is a pure function of the message and the group's configuration
// (membership, keys, limits), so the host runs it on the transport's stream
// goroutines, in parallel and off the protocol goroutine, where the Ed25519
// verifications (about 42 µs each, DESIGN.md §3.1) can use every core.
// Node.Step assumes its input passed Checker.Message and applies only the
// checks that need protocol state: the view and the view-change flag, the
// watermarks and the new-view floor, one PRE-PREPARE per (v, s), duplicates.
// A message that fails here never reaches the node: the host drops and counts
// it, and nothing in it is trusted (pbft.md, Notation).
//
// Protocol messages are signed: this is the signature variant of PBFT that
// pbft.md specifies (the 2002 paper's main protocol authenticates with MAC
// vectors instead). Signatures are what make certificates transferable: a
// replica forwards 2f PREPAREs inside a VIEW-CHANGE, 2f+1 COMMITs in
// catch-up, 2f+1 CHECKPOINTs to a lagging peer, and the receiver checks every
// embedded signature here as if the vote had come to it directly. A
// certificate whose votes were counted but not verified would let one faulty
// replica fabricate any certificate, so every check below goes down to each
// signature inside.
//
// A bound on how many votes, certificates or requests a message holds is
// checked before their signatures are verified, and a PRE-PREPARE's own
// signature before the client signatures of the requests in its body, so an
// oversized message costs no verification of what it carries and a forged
// PRE-PREPARE costs one verification, not one per request.
//
// Every error of a message check wraps a sentinel of errors.go, so hosts and
// tests can tell a forgery (ErrBadSignature, ErrWrongSigner) from a stranger
// (ErrNotMember), a malformed or oversized message (ErrMalformed,
// ErrTooLarge, ErrBadDigest, ErrInvalidRequest) or a bad certificate
// (ErrBadCertificate, ErrBadNewView).

import (
	"bytes"
	"crypto/ed25519"
	"fmt"

	"github.com/augustus-db/augustus/pkg/bft/bftpb"
	"github.com/augustus-db/augustus/pkg/bft/internal/quorum"
)

// CheckerConfig configures the stateless checks of messages and requests.
// Every replica of a group must check with the same configuration as every
// other and with the limits its primary batches by (CheckerConfigFrom): a
// batch that passes at some correct replicas and fails at others would split
// the group, as MAC authenticators do in the "big MAC" attack (DESIGN.md §3).
type CheckerConfig struct {
	// ClusterID and Group select the signing domain (signbytes.go): a
	// signature made in another cluster or group does not verify here. The
	// group has N replicas, ids 0..N-1, tolerating F faults.
	ClusterID string
	Group     GroupID
	N, F      int
	// CheckpointInterval (K) and LogWindow (L) as in Config.
	// CHECKPOINTs must fall on the K grid (G1), and a VIEW-CHANGE's prepared
	// certificates within L above its checkpoint (V3). The batch and request
	// limits are Config's too (N2): a correct primary cuts batches within
	// them, so its batches always pass.
	CheckpointInterval SeqNum
	LogWindow          SeqNum
	MaxBatchRequests   int
	MaxBatchBytes      int
	MaxRequestBytes    int
	// MaxFetchBatches must be positive. The Checker does not bound the range
	// of a Fetch: the node that answers sends at most MaxFetchBatches
	// batches per Fetch and rate-limits each peer (Node.onFetch).
	//
	// Verifier holds the public keys of the group's replicas and of clients,
	// and the cluster's client policy.
	MaxFetchBatches int
	Verifier        Verifier
	// Validate is the application's stateless validation of a request
	// payload (DESIGN.md §3.2); nil accepts every payload. It must be
	// deterministic: every correct replica must reach the same verdict on
	// the same payload, for the reason given above.
	Validate func(payload []byte) error
}

// CheckerConfigFrom derives the checker configuration from a node's.
// Deriving it, rather than configuring it apart, keeps the limits the
// primary batches by and the limits backups check by the same.
func CheckerConfigFrom(c Config, v Verifier, validate func([]byte) error) CheckerConfig {
	return CheckerConfig{
		ClusterID: c.ClusterID, Group: c.Group, N: c.N, F: c.F,
		CheckpointInterval: c.CheckpointInterval, LogWindow: c.LogWindow,
		MaxBatchRequests: c.MaxBatchRequests, MaxBatchBytes: c.MaxBatchBytes,
		MaxRequestBytes: c.MaxRequestBytes, MaxFetchBatches: c.MaxFetchBatches,
		Verifier: v, Validate: validate,
	}
}

// Checker performs every check of a message that needs no protocol state:
// membership, signatures (of the message and of every certificate inside
// it), digests against bodies, size limits, request validity, the structure
// of certificates, and that a NEW-VIEW's PRE-PREPAREs follow from its
// VIEW-CHANGEs (V5). It is safe for concurrent use, so hosts run it on a
// pool of goroutines before Node.Step. The node then applies the checks that
// depend on its state (view, watermarks, what it accepted before).
//
// A Checker holds no state besides its configuration, so a message's verdict
// never depends on what arrived before it: the same message passes or fails
// at every correct replica of the group.
type Checker struct {
	cfg        CheckerConfig
	dom        Domain
	q          quorum.Sizes
	nullDigest Digest
}

// NewChecker validates cfg and returns a Checker.
func NewChecker(cfg CheckerConfig) (*Checker, error) {
	q, err := quorum.New(cfg.N, cfg.F)
	if err != nil {
		return nil, fmt.Errorf("bft: checker: %w", err)
	}
	if cfg.Verifier == nil {
		return nil, fmt.Errorf("bft: checker: a verifier is required")
	}
	if cfg.CheckpointInterval == 0 || cfg.LogWindow == 0 || cfg.MaxBatchRequests <= 0 || cfg.MaxBatchBytes <= 0 || cfg.MaxRequestBytes <= 0 || cfg.MaxFetchBatches <= 0 {
		return nil, fmt.Errorf("bft: checker: limits must be positive")
	}
	dom := NewDomain(cfg.ClusterID, cfg.Group)
	// The null batch's digest is what V4 proposes for a seq no VIEW-CHANGE
	// has a certificate for; newView recomputes O with it.
	return &Checker{cfg: cfg, dom: dom, q: q, nullDigest: dom.BatchDigest(&bftpb.Batch{})}, nil
}

// WithVerifier returns a copy of the checker that checks signatures with v
// instead of the configured Verifier. A host uses it to run the checks over
// a verifier that records the signatures and verifies them together
// (batch verification, pkg/bft/auth.Batch): if they all verify, the verdict
// is the checker's; if not, the host checks again with the checker itself,
// whose verdict is then the same — both accept a message exactly when its
// structure is sound and every signature in it is valid.
func (c *Checker) WithVerifier(v Verifier) *Checker {
	cp := *c
	cp.cfg.Verifier = v
	return &cp
}

// Domain returns the signing domain the checker verifies against.
func (c *Checker) Domain() *Domain { return &c.dom }

// primaryOf is the primary of view v, v mod n, as Config.primaryOf.
func (c *Checker) primaryOf(v uint64) uint32 { return uint32(v % uint64(c.cfg.N)) }

// member checks that id names a replica of the group. Ids come from the
// wire, and the node indexes arrays by them; an id outside 0..n-1 is
// rejected before it is used anywhere.
func (c *Checker) member(id uint32) error {
	if int(id) >= c.cfg.N {
		return fmt.Errorf("%w: replica %d of %d", ErrNotMember, id, c.cfg.N)
	}
	return nil
}

// verifyReplica checks that sig is replica id's signature of msg, the
// canonical bytes of signbytes.go. An empty signature is rejected without
// calling the Verifier.
func (c *Checker) verifyReplica(id uint32, msg, sig []byte) error {
	if err := c.member(id); err != nil {
		return err
	}
	if len(sig) == 0 {
		return fmt.Errorf("%w: empty signature from replica %d", ErrBadSignature, id)
	}
	if err := c.cfg.Verifier.VerifyReplica(ReplicaID(id), msg, sig); err != nil {
		return fmt.Errorf("%w: replica %d: %v", ErrBadSignature, id, err)
	}
	return nil
}

// checkDigestLen checks that d is a SHA-256 digest. The node converts
// digests to fixed arrays and ignores the conversion's error (digestFrom),
// because a message reaches it only after this check: a digest of another
// length would otherwise be read as the zero digest.
func checkDigestLen(d []byte) error {
	if len(d) != 32 {
		return fmt.Errorf("%w: digest of %d bytes", ErrMalformed, len(d))
	}
	return nil
}

// Request checks a client request: well-formed, within limits, signed by
// its client, allowed by the cluster policy and valid for the application.
// Requests arrive from clients (Node.Propose), forwarded by replicas (C4),
// and inside batches (Batch); all three go through here.
func (c *Checker) Request(r *bftpb.Request) error {
	if r == nil {
		return fmt.Errorf("%w: nil request", ErrInvalidRequest)
	}
	// C1: the client id is the client's Ed25519 public key; anything else
	// is not a key, and the client table is keyed by it.
	if len(r.Client) != ed25519.PublicKeySize {
		return fmt.Errorf("%w: client id of %d bytes", ErrInvalidRequest, len(r.Client))
	}
	// Timestamps start at 1 (0 is the initial low watermark). A request's
	// low declares every timestamp at or below it finished (C2, clients.go),
	// so low >= timestamp declares the request itself finished: it could
	// only ever be answered STALE, and is refused before it takes a place in
	// a batch.
	if r.Timestamp == 0 || r.Low >= r.Timestamp {
		return fmt.Errorf("%w: timestamp %d with low watermark %d", ErrInvalidRequest, r.Timestamp, r.Low)
	}
	// Bounds what one request costs every replica. Config.Validate keeps
	// MaxRequestBytes <= MaxBatchBytes, so a valid request always fits in a
	// batch.
	if len(r.Payload) > c.cfg.MaxRequestBytes {
		return fmt.Errorf("%w: request payload of %d bytes exceeds %d", ErrTooLarge, len(r.Payload), c.cfg.MaxRequestBytes)
	}
	// C1: the client's signature over RequestBytes (client, timestamp, low,
	// payload hash, in this cluster and group). Without it anyone — a faulty
	// primary first of all — could order operations in a client's name, or
	// move a client's low watermark and make its pending requests stale.
	// Because the timestamp is signed, a replayed request is the same
	// request, and the client table executes it at most once (C2). The
	// Verifier also applies the cluster's client policy.
	if err := c.cfg.Verifier.VerifyClient(ClientID(r.Client), c.dom.RequestBytes(r), r.Signature); err != nil {
		return fmt.Errorf("%w: %w", ErrBadSignature, err)
	}
	// N2, DESIGN.md §3.2: the application's stateless validation. It runs
	// at every replica with the same verdict (signed requests, deterministic
	// Validate), so a batch holding an invalid request is refused by every
	// correct backup alike: it is evidence against the primary, and the
	// batch never prepares, so a backup waiting for its requests times out
	// and changes the view (V1).
	if c.cfg.Validate != nil {
		if err := c.cfg.Validate(r.Payload); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidRequest, err)
		}
	}
	return nil
}

// Batch checks a batch body against its digest and limits and every
// request in it (N2). Bodies come with a PRE-PREPARE, in a committed batch
// of catch-up, or alone in answer to a body fetch; each is trusted only
// through this check.
func (c *Checker) Batch(b *bftpb.Batch, digest []byte) error {
	// The null batch is an empty Batch, never a missing one.
	if b == nil {
		return fmt.Errorf("%w: missing batch", ErrMalformed)
	}
	// N2 size limits, before any hashing: an oversized batch costs no work.
	// The byte count is the one the primary cuts by (sum of payload sizes,
	// Node.cutBatch), so a correct primary's batch always passes.
	if len(b.Requests) > c.cfg.MaxBatchRequests {
		return fmt.Errorf("%w: batch of %d requests exceeds %d", ErrTooLarge, len(b.Requests), c.cfg.MaxBatchRequests)
	}
	size := 0
	for _, r := range b.Requests {
		size += len(r.GetPayload())
	}
	if size > c.cfg.MaxBatchBytes {
		return fmt.Errorf("%w: batch of %d bytes exceeds %d", ErrTooLarge, size, c.cfg.MaxBatchBytes)
	}
	// N2: the body must be the batch the digest names. Signatures and
	// certificates cover only (view, seq, digest), never the body, so this
	// is the one place that ties requests to what replicas vote on. Without
	// it a faulty primary could send different bodies under one signed
	// header, or a peer answer a body fetch with other requests, and
	// replicas that committed one digest would execute different batches.
	if d := c.dom.BatchDigest(b); !bytes.Equal(d[:], digest) {
		return ErrBadDigest
	}
	// N2: every request valid (Request). A faulty primary could otherwise
	// get forged or invalid requests ordered, and every replica would
	// execute them.
	for i, r := range b.Requests {
		if err := c.Request(r); err != nil {
			return fmt.Errorf("request %d of batch: %w", i, err)
		}
	}
	return nil
}

// Message checks everything about m that needs no protocol state. m.From is
// the sender as the transport authenticated it (mutual TLS; the transport
// overwrites whatever the peer wrote there), so it is trusted here.
func (c *Checker) Message(m *bftpb.Message) error {
	if m == nil {
		return fmt.Errorf("%w: nil message", ErrMalformed)
	}
	if err := c.member(m.From); err != nil {
		return err
	}
	// signer checks that a message a replica sends in its own name comes
	// from that replica's link. Votes of others travel only inside
	// certificates, which are checked on their own. So a faulty replica
	// cannot replay a correct replica's old vote as a fresh message from
	// it, and the node's per-sender bookkeeping (first vote per sender,
	// drop counters, Status and Fetch answered to m.From) describes who
	// really sent what.
	signer := func(id uint32) error {
		if id != m.From {
			return fmt.Errorf("%w: from %d, signed as %d", ErrWrongSigner, m.From, id)
		}
		return nil
	}
	switch b := m.Body.(type) {
	case *bftpb.Message_Request:
		// A request a replica forwards (C4): the client's signature is what
		// counts, not the forwarder's, so any member may send one.
		return c.Request(b.Request)
	case *bftpb.Message_PrePrepare:
		// N1, N2: the primary sends the batch with the header, so a body is
		// allowed (and then checked) here.
		if err := signer(b.PrePrepare.GetReplica()); err != nil {
			return err
		}
		return c.prePrepare(b.PrePrepare, true)
	case *bftpb.Message_Prepare:
		if err := signer(b.Prepare.GetReplica()); err != nil {
			return err
		}
		return c.prepare(b.Prepare)
	case *bftpb.Message_Commit:
		if err := signer(b.Commit.GetReplica()); err != nil {
			return err
		}
		return c.commit(b.Commit)
	case *bftpb.Message_Checkpoint:
		if err := signer(b.Checkpoint.GetReplica()); err != nil {
			return err
		}
		return c.checkpoint(b.Checkpoint)
	case *bftpb.Message_ViewChange:
		if err := signer(b.ViewChange.GetReplica()); err != nil {
			return err
		}
		return c.viewChange(b.ViewChange)
	case *bftpb.Message_NewView:
		// A NEW-VIEW proves itself — the primary's signature over it, 2f+1
		// valid VIEW-CHANGEs, O recomputed from them (newView) — so any
		// member may relay it: a backup brings a peer behind in views into
		// its view (Node.onStatus). Demanding that the sender be the primary
		// would leave that to the primary alone.
		return c.newView(b.NewView)
	case *bftpb.Message_Status:
		// An unsigned hint (catchup.go): only the link authenticates it, so
		// the replica it names must be the link's. It never changes protocol
		// state; it only prompts fetches and re-sends.
		return signer(b.Status.GetReplica())
	case *bftpb.Message_Fetch:
		// An unsigned request for data, answered to m.From.
		if err := signer(b.Fetch.GetReplica()); err != nil {
			return err
		}
		return c.fetch(b.Fetch)
	// The last three are answers of catch-up and prove themselves — a
	// commit certificate, a body checked against its digest, a checkpoint
	// certificate — so who relays them does not matter, only what they
	// prove (G3).
	case *bftpb.Message_CommittedBatch:
		return c.committedBatch(b.CommittedBatch)
	case *bftpb.Message_BatchBody:
		// The node takes the body only for a slot whose PRE-PREPARE or
		// commit certificate names this digest (Node.onBatchBody), so a peer
		// cannot plant a body; here it must match the digest it claims.
		if err := checkDigestLen(b.BatchBody.GetDigest()); err != nil {
			return err
		}
		return c.Batch(b.BatchBody.GetBatch(), b.BatchBody.GetDigest())
	case *bftpb.Message_CheckpointCert:
		return c.CheckpointCert(b.CheckpointCert)
	default:
		return fmt.Errorf("%w: unknown or empty body", ErrMalformed)
	}
}

// prePrepare checks a PRE-PREPARE: signed by the primary of its view, with a
// body that matches the digest if the body is present (N2).
//
// bodyAllowed is false for the PRE-PREPAREs inside certificates (prepared
// certificates in VIEW-CHANGEs, O in a NEW-VIEW). Those travel as headers
// and their bodies are fetched by digest (docs/bft.md, "Certificates carry
// headers"); the node never reads a body from a certificate. A body there is
// refused rather than checked, which keeps a VIEW-CHANGE (up to L
// certificates) and a NEW-VIEW (up to L PRE-PREPAREs) small.
func (c *Checker) prePrepare(pp *bftpb.PrePrepare, bodyAllowed bool) error {
	if pp == nil {
		return fmt.Errorf("%w: nil pre-prepare", ErrMalformed)
	}
	if err := checkDigestLen(pp.Digest); err != nil {
		return err
	}
	// Seq 0 is the genesis checkpoint; batches start at 1.
	if pp.Seq == 0 {
		return fmt.Errorf("%w: pre-prepare for seq 0", ErrMalformed)
	}
	// N2: only the primary of v may pre-prepare in v. A backup's
	// PRE-PREPARE would carry a valid signature — its own — so the role is
	// checked explicitly, before the signature is verified.
	if pp.Replica != c.primaryOf(pp.View) {
		return fmt.Errorf("%w: pre-prepare for view %d from %d, not its primary", ErrWrongSigner, pp.View, pp.Replica)
	}
	// The primary's signature over (view, seq, digest): stops forged
	// PRE-PREPAREs and any change to a genuine one's view, seq or digest.
	if err := c.verifyReplica(pp.Replica, c.dom.PrePrepareBytes(pp), pp.Signature); err != nil {
		return err
	}
	// N2: with a body, the body must match the digest and every request in
	// it must be valid. The header's signature was verified first, so a
	// forged PRE-PREPARE costs one verification, not one per request.
	if pp.Batch != nil {
		if !bodyAllowed {
			return fmt.Errorf("%w: certificate pre-prepare carries a body", ErrMalformed)
		}
		return c.Batch(pp.Batch, pp.Digest)
	}
	return nil
}

// prepare checks a PREPARE; the primary's own PREPARE never counts (N4), so
// one from the primary is rejected.
//
// Why not count it: a prepared certificate must show that 2f+1 distinct
// replicas accepted (v, s, d) — the primary through its PRE-PREPARE, 2f
// backups through PREPAREs. Two such certificates for one (v, s) share at
// least 2(2f+1) - (3f+1) = f+1 replicas, so at least one correct replica,
// which would have accepted two PRE-PREPAREs for (v, s) (N2 forbids it): at
// most one digest prepares per (v, s). If the primary's PREPARE counted, a
// certificate could hold only 2f distinct replicas (the primary twice), two
// of them could share only f-1 replicas, all possibly faulty, and a faulty
// primary could get two batches prepared at one (v, s). Rejecting it here
// means no count anywhere can include it; the node filters it out again
// when it counts (checkPrepared, restorePhase).
func (c *Checker) prepare(p *bftpb.Prepare) error {
	if p == nil {
		return fmt.Errorf("%w: nil prepare", ErrMalformed)
	}
	if err := checkDigestLen(p.Digest); err != nil {
		return err
	}
	if p.Seq == 0 {
		return fmt.Errorf("%w: prepare for seq 0", ErrMalformed)
	}
	if p.Replica == c.primaryOf(p.View) {
		return fmt.Errorf("%w: prepare from the primary of view %d", ErrWrongSigner, p.View)
	}
	return c.verifyReplica(p.Replica, c.dom.PrepareBytes(p), p.Signature)
}

// commit checks a COMMIT's shape and signature. Every replica, the primary
// included, sends COMMIT once prepared (N5). Whether a COMMIT counts — for
// the digest the replica prepared, in its view — is the node's decision
// (N6, checkCommitted).
func (c *Checker) commit(m *bftpb.Commit) error {
	if m == nil {
		return fmt.Errorf("%w: nil commit", ErrMalformed)
	}
	if err := checkDigestLen(m.Digest); err != nil {
		return err
	}
	if m.Seq == 0 {
		return fmt.Errorf("%w: commit for seq 0", ErrMalformed)
	}
	return c.verifyReplica(m.Replica, c.dom.CommitBytes(m), m.Signature)
}

// checkpoint checks a CHECKPOINT's shape and signature.
func (c *Checker) checkpoint(m *bftpb.Checkpoint) error {
	if m == nil {
		return fmt.Errorf("%w: nil checkpoint", ErrMalformed)
	}
	// G1: replicas take checkpoints only after executing a positive
	// multiple of K. No correct replica signs one elsewhere, so one off the
	// grid can never join a certificate and is malformed.
	if m.Seq == 0 || m.Seq%uint64(c.cfg.CheckpointInterval) != 0 {
		return fmt.Errorf("%w: checkpoint at seq %d, not a positive multiple of %d", ErrMalformed, m.Seq, c.cfg.CheckpointInterval)
	}
	if err := checkDigestLen(m.StateDigest); err != nil {
		return err
	}
	return c.verifyReplica(m.Replica, c.dom.CheckpointBytes(m), m.Signature)
}

// CheckpointCert checks 2f+1 matching signed checkpoints from distinct
// replicas (G1). Checkpoint certificates come from any member (catch-up
// answers, a VIEW-CHANGE's C, a NEW-VIEW's min-s) and move the receiver's
// low watermark or start a state transfer, so each must prove itself.
func (c *Checker) CheckpointCert(cert *bftpb.CheckpointCert) error {
	if cert == nil {
		return fmt.Errorf("%w: nil checkpoint certificate", ErrMalformed)
	}
	return c.checkpointProof(cert.Seq, cert.StateDigest, cert.Checkpoints)
}

// checkpointProof checks that cps are 2f+1 valid CHECKPOINTs for (seq,
// digest) from distinct replicas.
//
// Why 2f+1 and not f+1: f+1 matching CHECKPOINTs would already prove the
// digest (one correct replica computed it), but a stable checkpoint is where
// replicas discard their log (G2), and it must outlive that. With 2f+1
// signers at least f+1 correct replicas hold it, so any 2f+1 VIEW-CHANGEs
// include one that reports it, and V4, which starts the new view at the
// highest checkpoint reported (min-s), never re-proposes — or fills with a
// null batch — a seq whose prepared certificates were garbage-collected; and
// f+1 correct replicas can serve its state (G3). With f+1 signers only one
// correct replica need hold it, and a NEW-VIEW built from VIEW-CHANGEs that
// miss it could replace batches committed below it.
func (c *Checker) checkpointProof(seq uint64, digest []byte, cps []*bftpb.Checkpoint) error {
	// More entries than replicas cannot be distinct; refused before any
	// signature is verified.
	if len(cps) < c.q.Quorum() || len(cps) > c.cfg.N {
		return fmt.Errorf("%w: %d checkpoints, need %d", ErrBadCertificate, len(cps), c.q.Quorum())
	}
	var seen quorum.Set
	for _, cp := range cps {
		// Every CHECKPOINT must be for this (seq, digest): votes for other
		// states prove nothing about this one.
		if cp.GetSeq() != seq || !bytes.Equal(cp.GetStateDigest(), digest) {
			return fmt.Errorf("%w: checkpoint does not match (seq %d)", ErrBadCertificate, seq)
		}
		// One vote per replica: 2f+1 copies of a faulty replica's
		// checkpoint are one vote.
		if !seen.Add(cp.GetReplica()) {
			return fmt.Errorf("%w: duplicate checkpoint from replica %d", ErrBadCertificate, cp.GetReplica())
		}
		// Grid, digest length, membership and signature of each vote.
		if err := c.checkpoint(cp); err != nil {
			return fmt.Errorf("%w: %w", ErrBadCertificate, err)
		}
	}
	return nil
}

// PreparedCert checks a prepared certificate: a PRE-PREPARE without body
// from the primary of its view and 2f matching PREPAREs from distinct
// backups (N4).
//
// Prepared certificates travel in VIEW-CHANGEs (V2) and decide what the next
// view re-proposes (V4). A valid one shows that 2f+1 distinct replicas
// accepted (v, s, d), so no other digest prepared at (v, s) (see prepare);
// a forged one would let a faulty replica make the next primary re-propose a
// batch that never prepared, in place of one that may have committed.
func (c *Checker) PreparedCert(pc *bftpb.PreparedCert) error {
	pp := pc.GetPrePrepare()
	// Header only, from the primary of its view, signed (N2).
	if err := c.prePrepare(pp, false); err != nil {
		return fmt.Errorf("%w: %w", ErrBadCertificate, err)
	}
	// At least 2f PREPAREs; at most n-1, the number of backups.
	if len(pc.Prepares) < c.q.Prepares() || len(pc.Prepares) > c.cfg.N-1 {
		return fmt.Errorf("%w: %d prepares, need %d", ErrBadCertificate, len(pc.Prepares), c.q.Prepares())
	}
	var seen quorum.Set
	for _, p := range pc.Prepares {
		// N4: each PREPARE must be for this very (v, s, d). A PREPARE of
		// another view or digest vouches for another PRE-PREPARE.
		if p.GetView() != pp.View || p.GetSeq() != pp.Seq || !bytes.Equal(p.GetDigest(), pp.Digest) {
			return fmt.Errorf("%w: prepare does not match its pre-prepare", ErrBadCertificate)
		}
		// N4: from distinct replicas.
		if !seen.Add(p.GetReplica()) {
			return fmt.Errorf("%w: duplicate prepare from replica %d", ErrBadCertificate, p.GetReplica())
		}
		// N4: from backups only (prepare rejects the primary's), signed.
		if err := c.prepare(p); err != nil {
			return fmt.Errorf("%w: %w", ErrBadCertificate, err)
		}
	}
	return nil
}

// CommitCert checks 2f+1 matching COMMITs from distinct replicas.
//
// This is N6's quorum as a transferable proof: 2f+1 COMMITs mean at least
// f+1 correct replicas prepared (v, s, d), so any 2f+1 VIEW-CHANGEs include
// one carrying that certificate (or a checkpoint at or above s), every
// later NEW-VIEW re-proposes d at s, and no other batch can commit there.
// That is what lets a lagging replica execute a batch it learned only
// through catch-up (G3), without having prepared it. With 2f COMMITs, as few
// as f correct replicas need have prepared it, and 2f+1 VIEW-CHANGEs could
// miss them all.
func (c *Checker) CommitCert(cc *bftpb.CommitCert) error {
	if cc == nil {
		return fmt.Errorf("%w: nil commit certificate", ErrMalformed)
	}
	// At least 2f+1; more than n cannot be distinct.
	if len(cc.Commits) < c.q.Quorum() || len(cc.Commits) > c.cfg.N {
		return fmt.Errorf("%w: %d commits, need %d", ErrBadCertificate, len(cc.Commits), c.q.Quorum())
	}
	var seen quorum.Set
	for _, m := range cc.Commits {
		// Every COMMIT for the certificate's (v, s, d).
		if m.GetView() != cc.View || m.GetSeq() != cc.Seq || !bytes.Equal(m.GetDigest(), cc.Digest) {
			return fmt.Errorf("%w: commit does not match the certificate", ErrBadCertificate)
		}
		// From distinct replicas.
		if !seen.Add(m.GetReplica()) {
			return fmt.Errorf("%w: duplicate commit from replica %d", ErrBadCertificate, m.GetReplica())
		}
		// Each a member's valid signature.
		if err := c.commit(m); err != nil {
			return fmt.Errorf("%w: %w", ErrBadCertificate, err)
		}
	}
	return nil
}

// viewChange checks V3: the checkpoint certificate proves the stable
// checkpoint, and every prepared certificate is valid, for a view below the
// new one, at a distinct seq in (s_c, s_c+L].
//
// A VIEW-CHANGE is its sender's report of what it may have helped commit;
// V4 builds the next view from 2f+1 of them. Each check below stops a lie
// that would bend that computation.
func (c *Checker) viewChange(vc *bftpb.ViewChange) error {
	if vc == nil {
		return fmt.Errorf("%w: nil view-change", ErrMalformed)
	}
	// Views start at 0; no view change leads there.
	if vc.View == 0 {
		return fmt.Errorf("%w: view-change to view 0", ErrMalformed)
	}
	// s_c is a checkpoint, so it lies on the K grid (G1).
	if vc.StableSeq%uint64(c.cfg.CheckpointInterval) != 0 {
		return fmt.Errorf("%w: stable checkpoint %d is not a multiple of %d", ErrBadCertificate, vc.StableSeq, c.cfg.CheckpointInterval)
	}
	// At most one certificate per seq in (s_c, s_c+L]: more cannot all be
	// valid. Refused before any of their signatures is verified.
	if len(vc.Prepared) > int(c.cfg.LogWindow) {
		return fmt.Errorf("%w: %d prepared certificates exceed the log window", ErrTooLarge, len(vc.Prepared))
	}
	// The sender's signature over the view, itself, s_c with its digest,
	// and the (seq, view, digest) of each certificate (ViewChangeBytes). A
	// relay — the new primary putting it into V above all — can neither
	// alter the report nor drop certificates from it: a dropped certificate
	// could hide a committed batch from V4. Checked before the embedded
	// certificates, so a forged VIEW-CHANGE costs one verification, not up
	// to (L+1)(2f+1).
	if err := c.verifyReplica(vc.Replica, c.dom.ViewChangeBytes(vc), vc.Signature); err != nil {
		return err
	}
	// s_c = 0 is the genesis checkpoint and needs no proof; a certificate
	// or digest beside it is malformed. Any other s_c must be proven by C
	// (V3): V4 takes the highest s_c in V as min-s, so an unproven high s_c
	// would make the NEW-VIEW skip every seq below it — dropping batches
	// that committed there — and send backups after a state nobody has.
	if vc.StableSeq == 0 {
		if len(vc.CheckpointCert) != 0 || len(vc.StableDigest) != 0 {
			return fmt.Errorf("%w: genesis checkpoint with a certificate", ErrBadCertificate)
		}
	} else if err := c.checkpointProof(vc.StableSeq, vc.StableDigest, vc.CheckpointCert); err != nil {
		return err
	}
	seqs := make(map[uint64]struct{}, len(vc.Prepared))
	for _, pc := range vc.Prepared {
		pp := pc.GetPrePrepare()
		// V3: only views below the new one. The sender reports what it
		// prepared before it left for vc.View; a certificate of vc.View or
		// later (genuine ones exist once the group has moved on) would carry
		// a later view's decisions into this NEW-VIEW, where the highest
		// view wins (V4).
		if pp.GetView() >= vc.View {
			return fmt.Errorf("%w: prepared certificate of view %d in a view-change to %d", ErrBadCertificate, pp.GetView(), vc.View)
		}
		// V3: s_c < s <= s_c+L. At or below s_c the checkpoint decided;
		// above s_c+L the sender's watermarks kept it from preparing. The
		// bound also caps max-s at min-s+L, so O has at most L entries.
		if pp.GetSeq() <= vc.StableSeq || pp.GetSeq() > vc.StableSeq+uint64(c.cfg.LogWindow) {
			return fmt.Errorf("%w: prepared certificate at seq %d outside (%d, %d]", ErrBadCertificate, pp.GetSeq(), vc.StableSeq, vc.StableSeq+uint64(c.cfg.LogWindow))
		}
		// V2: one certificate per seq, the highest view's, from a correct
		// sender.
		if _, dup := seqs[pp.GetSeq()]; dup {
			return fmt.Errorf("%w: two prepared certificates for seq %d", ErrBadCertificate, pp.GetSeq())
		}
		seqs[pp.GetSeq()] = struct{}{}
		// The certificate itself (PRE-PREPARE and 2f PREPAREs, N4).
		if err := c.PreparedCert(pc); err != nil {
			return err
		}
	}
	return nil
}

// newView checks V5: signed by the primary of the view, 2f+1 valid
// VIEW-CHANGEs for the view from distinct replicas, and O exactly as
// recomputed from them.
//
// This is the check that keeps a faulty new primary from rewriting history.
// Backups PREPARE every element of O (V5), so an O that does not follow
// from V — a lower view's digest, another batch or a null batch at a seq
// that committed in an earlier view — would be prepared and committed by
// correct replicas, and two batches would commit at one seq.
func (c *Checker) newView(nv *bftpb.NewView) error {
	if nv == nil {
		return fmt.Errorf("%w: nil new-view", ErrMalformed)
	}
	// V5: only the primary of v starts v.
	if nv.Replica != c.primaryOf(nv.View) {
		return fmt.Errorf("%w: new-view for view %d from %d, not its primary", ErrWrongSigner, nv.View, nv.Replica)
	}
	// V5: 2f+1 VIEW-CHANGEs. Every batch committed at a correct replica was
	// prepared by at least f+1 correct replicas (CommitCert), and any
	// 2f+1 VIEW-CHANGEs include at least one of them, so V carries its
	// certificate and O re-proposes it. With fewer, a faulty primary could
	// pick VIEW-CHANGEs that all omit it. The primary's own VIEW-CHANGE
	// need not be among them (V4 has the primary include its own; any 2f+1
	// valid ones are equally safe, so the Checker does not insist). More
	// than n cannot be distinct.
	if len(nv.ViewChanges) < c.q.Quorum() || len(nv.ViewChanges) > c.cfg.N {
		return fmt.Errorf("%w: %d view-changes, need %d", ErrBadNewView, len(nv.ViewChanges), c.q.Quorum())
	}
	var seen quorum.Set
	for _, vc := range nv.ViewChanges {
		// Each asks for this view. A VIEW-CHANGE for an earlier view reports
		// what its sender had prepared then, not since, and would hide
		// batches prepared in between.
		if vc.GetView() != nv.View {
			return fmt.Errorf("%w: view-change for view %d in new-view %d", ErrBadNewView, vc.GetView(), nv.View)
		}
		// From distinct replicas: one replica's report repeated is one
		// report.
		if !seen.Add(vc.GetReplica()) {
			return fmt.Errorf("%w: two view-changes from replica %d", ErrBadNewView, vc.GetReplica())
		}
		if err := c.member(vc.GetReplica()); err != nil {
			return err
		}
		// V3 for each: one invalid VIEW-CHANGE invalidates the NEW-VIEW,
		// since O rests on all of V.
		if err := c.viewChange(vc); err != nil {
			return fmt.Errorf("view-change from %d: %w", vc.GetReplica(), err)
		}
	}
	// V5: recompute O from V with the pure function the primary used (V4,
	// computeNewView) and demand exactly that O, entry for entry.
	plan := computeNewView(nv.ViewChanges, c.nullDigest)
	if len(plan.entries) != len(nv.PrePrepares) {
		return fmt.Errorf("%w: %d pre-prepares, expected %d", ErrBadNewView, len(nv.PrePrepares), len(plan.entries))
	}
	for i, pp := range nv.PrePrepares {
		want := plan.entries[i]
		// Of the new view, at the next seq of (min-s, max-s], with the
		// digest V4 chose there.
		if pp.GetView() != nv.View || pp.GetSeq() != uint64(want.seq) || !bytes.Equal(pp.GetDigest(), want.digest[:]) {
			return fmt.Errorf("%w: pre-prepare %d is (view %d, seq %d, %x), expected (view %d, seq %d, %s)",
				ErrBadNewView, i, pp.GetView(), pp.GetSeq(), pp.GetDigest(), nv.View, want.seq, want.digest)
		}
		// Each entry is a PRE-PREPARE signed on its own by the primary:
		// backups PREPARE against it, and it later appears in prepared
		// certificates of VIEW-CHANGEs, which are checked without this
		// NEW-VIEW.
		if err := c.prePrepare(pp, false); err != nil {
			return fmt.Errorf("%w: %w", ErrBadNewView, err)
		}
	}
	// The primary's signature over the view, itself, a hash of each
	// VIEW-CHANGE's signed bytes and O's (seq, digest) (NewViewBytes): it
	// binds V and O to the primary as one message.
	return c.verifyReplica(nv.Replica, c.dom.NewViewBytes(nv), nv.Signature)
}

// fetch checks a Fetch. Fetches are unsigned requests for data (catch-up,
// catchup.go) and change nothing at the receiver; these checks only keep the
// answer well-defined.
func (c *Checker) fetch(f *bftpb.Fetch) error {
	switch f.Kind {
	case bftpb.Fetch_KIND_COMMITTED:
		// A non-empty range of positive seqs. Its length is bounded by the
		// answering node (Node.onFetch), not here.
		if f.FromSeq == 0 || f.ToSeq < f.FromSeq {
			return fmt.Errorf("%w: fetch range [%d, %d]", ErrMalformed, f.FromSeq, f.ToSeq)
		}
	case bftpb.Fetch_KIND_NEW_VIEW:
		// Any view is a fair question: the node answers with the NEW-VIEW
		// of its current view only if it is in the asked view or beyond
		// (Node.onFetch).
	case bftpb.Fetch_KIND_BATCH:
		// The node looks the body up by this digest (see checkDigestLen).
		return checkDigestLen(f.Digest)
	default:
		return fmt.Errorf("%w: fetch kind %v", ErrMalformed, f.Kind)
	}
	return nil
}

// committedBatch checks a committed batch sent in catch-up (G3): the
// PRE-PREPARE with its body and a commit certificate for the same (view,
// seq, digest).
//
// The commit certificate proves that the batch committed (CommitCert). The
// PRE-PREPARE's signature matters as well: the node files it as the slot's
// PRE-PREPARE, persists it, rebuilds the slot's phase from it after a
// restart and serves it to other lagging replicas (Node.onFetch), so a
// forged one would end up in messages it sends.
func (c *Checker) committedBatch(cb *bftpb.CommittedBatch) error {
	// The body is the point of the answer: the receiver has no other way to
	// it.
	pp := cb.GetPrePrepare()
	if pp == nil || pp.Batch == nil {
		return fmt.Errorf("%w: committed batch without its body", ErrMalformed)
	}
	// From the primary of its view, signed; body against digest, every
	// request valid (N2).
	if err := c.prePrepare(pp, true); err != nil {
		return err
	}
	// The certificate must be about this PRE-PREPARE: a genuine certificate
	// for another (view, seq, digest) would otherwise vouch for this body.
	cc := cb.GetCert()
	if cc.GetView() != pp.View || cc.GetSeq() != pp.Seq || !bytes.Equal(cc.GetDigest(), pp.Digest) {
		return fmt.Errorf("%w: commit certificate does not match the pre-prepare", ErrBadCertificate)
	}
	return c.CommitCert(cc)
}
