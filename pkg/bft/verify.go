package bft

import (
	"bytes"
	"crypto/ed25519"
	"fmt"

	"github.com/augustus-db/augustus/pkg/bft/bftpb"
	"github.com/augustus-db/augustus/pkg/bft/internal/quorum"
)

// CheckerConfig configures the stateless checks of messages and requests.
type CheckerConfig struct {
	ClusterID string
	Group     GroupID
	N, F      int
	// CheckpointInterval (K) and LogWindow (L) as in Config.
	CheckpointInterval SeqNum
	LogWindow          SeqNum
	MaxBatchRequests   int
	MaxBatchBytes      int
	MaxRequestBytes    int
	// MaxFetchBatches bounds the range of a Fetch.
	MaxFetchBatches int
	Verifier        Verifier
	// Validate is the application's stateless validation of a request
	// payload (DESIGN.md §3.2); nil accepts every payload.
	Validate func(payload []byte) error
}

// CheckerConfigFrom derives the checker configuration from a node's.
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
	return &Checker{cfg: cfg, dom: dom, q: q, nullDigest: dom.BatchDigest(&bftpb.Batch{})}, nil
}

// Domain returns the signing domain the checker verifies against.
func (c *Checker) Domain() *Domain { return &c.dom }

func (c *Checker) primaryOf(v uint64) uint32 { return uint32(v % uint64(c.cfg.N)) }

func (c *Checker) member(id uint32) error {
	if int(id) >= c.cfg.N {
		return fmt.Errorf("%w: replica %d of %d", ErrNotMember, id, c.cfg.N)
	}
	return nil
}

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

func checkDigestLen(d []byte) error {
	if len(d) != 32 {
		return fmt.Errorf("%w: digest of %d bytes", ErrMalformed, len(d))
	}
	return nil
}

// Request checks a client request: well-formed, within limits, signed by
// its client, allowed by the cluster policy and valid for the application.
func (c *Checker) Request(r *bftpb.Request) error {
	if r == nil {
		return fmt.Errorf("%w: nil request", ErrInvalidRequest)
	}
	if len(r.Client) != ed25519.PublicKeySize {
		return fmt.Errorf("%w: client id of %d bytes", ErrInvalidRequest, len(r.Client))
	}
	if r.Timestamp == 0 || r.Low >= r.Timestamp {
		return fmt.Errorf("%w: timestamp %d with low watermark %d", ErrInvalidRequest, r.Timestamp, r.Low)
	}
	if len(r.Payload) > c.cfg.MaxRequestBytes {
		return fmt.Errorf("%w: request payload of %d bytes exceeds %d", ErrTooLarge, len(r.Payload), c.cfg.MaxRequestBytes)
	}
	if err := c.cfg.Verifier.VerifyClient(ClientID(r.Client), c.dom.RequestBytes(r), r.Signature); err != nil {
		return fmt.Errorf("%w: %v", ErrBadSignature, err)
	}
	if c.cfg.Validate != nil {
		if err := c.cfg.Validate(r.Payload); err != nil {
			return fmt.Errorf("%w: %v", ErrInvalidRequest, err)
		}
	}
	return nil
}

// Batch checks a batch body against its digest and limits and every
// request in it (N2).
func (c *Checker) Batch(b *bftpb.Batch, digest []byte) error {
	if b == nil {
		return fmt.Errorf("%w: missing batch", ErrMalformed)
	}
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
	if d := c.dom.BatchDigest(b); !bytes.Equal(d[:], digest) {
		return ErrBadDigest
	}
	for i, r := range b.Requests {
		if err := c.Request(r); err != nil {
			return fmt.Errorf("request %d of batch: %w", i, err)
		}
	}
	return nil
}

// Message checks everything about m that needs no protocol state. from is
// m.From, set by the transport from the authenticated link.
func (c *Checker) Message(m *bftpb.Message) error {
	if m == nil {
		return fmt.Errorf("%w: nil message", ErrMalformed)
	}
	if err := c.member(m.From); err != nil {
		return err
	}
	signer := func(id uint32) error {
		if id != m.From {
			return fmt.Errorf("%w: from %d, signed as %d", ErrWrongSigner, m.From, id)
		}
		return nil
	}
	switch b := m.Body.(type) {
	case *bftpb.Message_Request:
		return c.Request(b.Request)
	case *bftpb.Message_PrePrepare:
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
		if err := signer(b.NewView.GetReplica()); err != nil {
			return err
		}
		return c.newView(b.NewView)
	case *bftpb.Message_Status:
		return signer(b.Status.GetReplica())
	case *bftpb.Message_Fetch:
		if err := signer(b.Fetch.GetReplica()); err != nil {
			return err
		}
		return c.fetch(b.Fetch)
	case *bftpb.Message_CommittedBatch:
		return c.committedBatch(b.CommittedBatch)
	case *bftpb.Message_BatchBody:
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
func (c *Checker) prePrepare(pp *bftpb.PrePrepare, bodyAllowed bool) error {
	if pp == nil {
		return fmt.Errorf("%w: nil pre-prepare", ErrMalformed)
	}
	if err := checkDigestLen(pp.Digest); err != nil {
		return err
	}
	if pp.Seq == 0 {
		return fmt.Errorf("%w: pre-prepare for seq 0", ErrMalformed)
	}
	if pp.Replica != c.primaryOf(pp.View) {
		return fmt.Errorf("%w: pre-prepare for view %d from %d, not its primary", ErrWrongSigner, pp.View, pp.Replica)
	}
	if err := c.verifyReplica(pp.Replica, c.dom.PrePrepareBytes(pp), pp.Signature); err != nil {
		return err
	}
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

func (c *Checker) checkpoint(m *bftpb.Checkpoint) error {
	if m == nil {
		return fmt.Errorf("%w: nil checkpoint", ErrMalformed)
	}
	if m.Seq == 0 || m.Seq%uint64(c.cfg.CheckpointInterval) != 0 {
		return fmt.Errorf("%w: checkpoint at seq %d, not a positive multiple of %d", ErrMalformed, m.Seq, c.cfg.CheckpointInterval)
	}
	if err := checkDigestLen(m.StateDigest); err != nil {
		return err
	}
	return c.verifyReplica(m.Replica, c.dom.CheckpointBytes(m), m.Signature)
}

// CheckpointCert checks 2f+1 matching signed checkpoints from distinct
// replicas (G1).
func (c *Checker) CheckpointCert(cert *bftpb.CheckpointCert) error {
	if cert == nil {
		return fmt.Errorf("%w: nil checkpoint certificate", ErrMalformed)
	}
	return c.checkpointProof(cert.Seq, cert.StateDigest, cert.Checkpoints)
}

func (c *Checker) checkpointProof(seq uint64, digest []byte, cps []*bftpb.Checkpoint) error {
	if len(cps) < c.q.Quorum() || len(cps) > c.cfg.N {
		return fmt.Errorf("%w: %d checkpoints, need %d", ErrBadCertificate, len(cps), c.q.Quorum())
	}
	var seen quorum.Set
	for _, cp := range cps {
		if cp.GetSeq() != seq || !bytes.Equal(cp.GetStateDigest(), digest) {
			return fmt.Errorf("%w: checkpoint does not match (seq %d)", ErrBadCertificate, seq)
		}
		if !seen.Add(cp.GetReplica()) {
			return fmt.Errorf("%w: duplicate checkpoint from replica %d", ErrBadCertificate, cp.GetReplica())
		}
		if err := c.checkpoint(cp); err != nil {
			return fmt.Errorf("%w: %v", ErrBadCertificate, err)
		}
	}
	return nil
}

// PreparedCert checks a prepared certificate: a PRE-PREPARE without body
// from the primary of its view and 2f matching PREPAREs from distinct
// backups (N4).
func (c *Checker) PreparedCert(pc *bftpb.PreparedCert) error {
	pp := pc.GetPrePrepare()
	if err := c.prePrepare(pp, false); err != nil {
		return fmt.Errorf("%w: %v", ErrBadCertificate, err)
	}
	if len(pc.Prepares) < c.q.Prepares() || len(pc.Prepares) > c.cfg.N-1 {
		return fmt.Errorf("%w: %d prepares, need %d", ErrBadCertificate, len(pc.Prepares), c.q.Prepares())
	}
	var seen quorum.Set
	for _, p := range pc.Prepares {
		if p.GetView() != pp.View || p.GetSeq() != pp.Seq || !bytes.Equal(p.GetDigest(), pp.Digest) {
			return fmt.Errorf("%w: prepare does not match its pre-prepare", ErrBadCertificate)
		}
		if !seen.Add(p.GetReplica()) {
			return fmt.Errorf("%w: duplicate prepare from replica %d", ErrBadCertificate, p.GetReplica())
		}
		if err := c.prepare(p); err != nil {
			return fmt.Errorf("%w: %v", ErrBadCertificate, err)
		}
	}
	return nil
}

// CommitCert checks 2f+1 matching COMMITs from distinct replicas.
func (c *Checker) CommitCert(cc *bftpb.CommitCert) error {
	if cc == nil {
		return fmt.Errorf("%w: nil commit certificate", ErrMalformed)
	}
	if len(cc.Commits) < c.q.Quorum() || len(cc.Commits) > c.cfg.N {
		return fmt.Errorf("%w: %d commits, need %d", ErrBadCertificate, len(cc.Commits), c.q.Quorum())
	}
	var seen quorum.Set
	for _, m := range cc.Commits {
		if m.GetView() != cc.View || m.GetSeq() != cc.Seq || !bytes.Equal(m.GetDigest(), cc.Digest) {
			return fmt.Errorf("%w: commit does not match the certificate", ErrBadCertificate)
		}
		if !seen.Add(m.GetReplica()) {
			return fmt.Errorf("%w: duplicate commit from replica %d", ErrBadCertificate, m.GetReplica())
		}
		if err := c.commit(m); err != nil {
			return fmt.Errorf("%w: %v", ErrBadCertificate, err)
		}
	}
	return nil
}

// viewChange checks V3: the checkpoint certificate proves the stable
// checkpoint, and every prepared certificate is valid, for a view below the
// new one, at a distinct seq in (s_c, s_c+L].
func (c *Checker) viewChange(vc *bftpb.ViewChange) error {
	if vc == nil {
		return fmt.Errorf("%w: nil view-change", ErrMalformed)
	}
	if vc.View == 0 {
		return fmt.Errorf("%w: view-change to view 0", ErrMalformed)
	}
	if vc.StableSeq%uint64(c.cfg.CheckpointInterval) != 0 {
		return fmt.Errorf("%w: stable checkpoint %d is not a multiple of %d", ErrBadCertificate, vc.StableSeq, c.cfg.CheckpointInterval)
	}
	if vc.StableSeq == 0 {
		if len(vc.CheckpointCert) != 0 || len(vc.StableDigest) != 0 {
			return fmt.Errorf("%w: genesis checkpoint with a certificate", ErrBadCertificate)
		}
	} else if err := c.checkpointProof(vc.StableSeq, vc.StableDigest, vc.CheckpointCert); err != nil {
		return err
	}
	if len(vc.Prepared) > int(c.cfg.LogWindow) {
		return fmt.Errorf("%w: %d prepared certificates exceed the log window", ErrTooLarge, len(vc.Prepared))
	}
	seqs := make(map[uint64]struct{}, len(vc.Prepared))
	for _, pc := range vc.Prepared {
		pp := pc.GetPrePrepare()
		if pp.GetView() >= vc.View {
			return fmt.Errorf("%w: prepared certificate of view %d in a view-change to %d", ErrBadCertificate, pp.GetView(), vc.View)
		}
		if pp.GetSeq() <= vc.StableSeq || pp.GetSeq() > vc.StableSeq+uint64(c.cfg.LogWindow) {
			return fmt.Errorf("%w: prepared certificate at seq %d outside (%d, %d]", ErrBadCertificate, pp.GetSeq(), vc.StableSeq, vc.StableSeq+uint64(c.cfg.LogWindow))
		}
		if _, dup := seqs[pp.GetSeq()]; dup {
			return fmt.Errorf("%w: two prepared certificates for seq %d", ErrBadCertificate, pp.GetSeq())
		}
		seqs[pp.GetSeq()] = struct{}{}
		if err := c.PreparedCert(pc); err != nil {
			return err
		}
	}
	return c.verifyReplica(vc.Replica, c.dom.ViewChangeBytes(vc), vc.Signature)
}

// newView checks V5: signed by the primary of the view, 2f+1 valid
// VIEW-CHANGEs for the view from distinct replicas, and O exactly as
// recomputed from them.
func (c *Checker) newView(nv *bftpb.NewView) error {
	if nv == nil {
		return fmt.Errorf("%w: nil new-view", ErrMalformed)
	}
	if nv.Replica != c.primaryOf(nv.View) {
		return fmt.Errorf("%w: new-view for view %d from %d, not its primary", ErrWrongSigner, nv.View, nv.Replica)
	}
	if len(nv.ViewChanges) < c.q.Quorum() || len(nv.ViewChanges) > c.cfg.N {
		return fmt.Errorf("%w: %d view-changes, need %d", ErrBadNewView, len(nv.ViewChanges), c.q.Quorum())
	}
	var seen quorum.Set
	for _, vc := range nv.ViewChanges {
		if vc.GetView() != nv.View {
			return fmt.Errorf("%w: view-change for view %d in new-view %d", ErrBadNewView, vc.GetView(), nv.View)
		}
		if !seen.Add(vc.GetReplica()) {
			return fmt.Errorf("%w: two view-changes from replica %d", ErrBadNewView, vc.GetReplica())
		}
		if err := c.member(vc.GetReplica()); err != nil {
			return err
		}
		if err := c.viewChange(vc); err != nil {
			return fmt.Errorf("view-change from %d: %w", vc.GetReplica(), err)
		}
	}
	plan := computeNewView(nv.ViewChanges, c.nullDigest)
	if len(plan.entries) != len(nv.PrePrepares) {
		return fmt.Errorf("%w: %d pre-prepares, expected %d", ErrBadNewView, len(nv.PrePrepares), len(plan.entries))
	}
	for i, pp := range nv.PrePrepares {
		want := plan.entries[i]
		if pp.GetView() != nv.View || pp.GetSeq() != uint64(want.seq) || !bytes.Equal(pp.GetDigest(), want.digest[:]) {
			return fmt.Errorf("%w: pre-prepare %d is (view %d, seq %d, %x), expected (view %d, seq %d, %s)",
				ErrBadNewView, i, pp.GetView(), pp.GetSeq(), pp.GetDigest(), nv.View, want.seq, want.digest)
		}
		if err := c.prePrepare(pp, false); err != nil {
			return fmt.Errorf("%w: %v", ErrBadNewView, err)
		}
	}
	return c.verifyReplica(nv.Replica, c.dom.NewViewBytes(nv), nv.Signature)
}

func (c *Checker) fetch(f *bftpb.Fetch) error {
	switch f.Kind {
	case bftpb.Fetch_KIND_COMMITTED:
		if f.FromSeq == 0 || f.ToSeq < f.FromSeq {
			return fmt.Errorf("%w: fetch range [%d, %d]", ErrMalformed, f.FromSeq, f.ToSeq)
		}
	case bftpb.Fetch_KIND_NEW_VIEW:
	case bftpb.Fetch_KIND_BATCH:
		return checkDigestLen(f.Digest)
	default:
		return fmt.Errorf("%w: fetch kind %v", ErrMalformed, f.Kind)
	}
	return nil
}

func (c *Checker) committedBatch(cb *bftpb.CommittedBatch) error {
	pp := cb.GetPrePrepare()
	if pp == nil || pp.Batch == nil {
		return fmt.Errorf("%w: committed batch without its body", ErrMalformed)
	}
	if err := c.prePrepare(pp, true); err != nil {
		return err
	}
	cc := cb.GetCert()
	if cc.GetView() != pp.View || cc.GetSeq() != pp.Seq || !bytes.Equal(cc.GetDigest(), pp.Digest) {
		return fmt.Errorf("%w: commit certificate does not match the pre-prepare", ErrBadCertificate)
	}
	return c.CommitCert(cc)
}
