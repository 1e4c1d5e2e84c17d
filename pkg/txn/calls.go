package txn

import (
	"bytes"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/auth"
	"github.com/augustus-db/augustus/pkg/txn/internal/wire"
)

// CallKind names what a client asks a group. Its value is the first byte of
// the call's encoding.
type CallKind byte

// The calls a client sends to a group.
const (
	// CallTxn delivers a transaction: from its owner (in the owner's signed
	// envelope), as a relay carrying f+1 signed votes of one involved group
	// (T3, K4), or as a plain copy, answered only from records (T3, E1).
	CallTxn CallKind = 'T'
	// CallOutcome terminates a multi-group transaction with a certificate
	// (E8, E10).
	CallOutcome CallKind = 'O'
	// CallRelease is the owner's own termination of a multi-group read-only
	// transaction, without a certificate (E8).
	CallRelease CallKind = 'R'
	// CallProof is the owner's termination proof for a multi-group update:
	// f+1 signed acknowledgements of every other involved group (W2, K3).
	CallProof CallKind = 'P'
	// CallQuery asks the group for the caller's watermark, abort mark and
	// records (W3); it uses no nonce.
	CallQuery CallKind = 'Q'
)

// String names the call kind.
func (k CallKind) String() string {
	switch k {
	case CallTxn:
		return "txn"
	case CallOutcome:
		return "outcome"
	case CallRelease:
		return "release"
	case CallProof:
		return "proof"
	case CallQuery:
		return "query"
	}
	return "unknown"
}

// SignatureSize is the size of an Ed25519 signature.
const SignatureSize = 64

// ReplicaSig is one replica's signature of a vote or an acknowledgement:
// a plain Ed25519 signature (SignatureSize bytes) or a tree signature, which
// covers every vote and acknowledgement the replica signed for one executed
// batch with one Ed25519 signature (pkg/bft/auth, sigtree.go).
type ReplicaSig struct {
	Replica bft.ReplicaID
	Sig     []byte
}

// GroupSigs are the signatures of f+1 distinct replicas of one group over the
// same vote or acknowledgement, in strictly increasing replica order.
type GroupSigs struct {
	Group bft.GroupID
	Sigs  []ReplicaSig
}

// AdminSig is an admin's signature over a metadata transaction's id (M5).
type AdminSig struct {
	Key [OwnerSize]byte
	Sig [SignatureSize]byte
}

// Certificate proves a multi-group transaction's outcome (E10): COMMIT
// carries f+1 signed commit votes of every declared group and no other;
// ABORT carries f+1 signed abort votes of one declared group. Parts are in
// strictly increasing group order.
type Certificate struct {
	Decision Decision
	Parts    []GroupSigs
}

// Encode returns the certificate's encoding: decision(1) uvarint(#parts) {
// sigs }, as inside an outcome call. Groups keep it with the record it
// terminated (E11).
func (c *Certificate) Encode() []byte {
	b := []byte{byte(c.Decision)}
	b = wire.AppendUvarint(b, uint64(len(c.Parts)))
	for i := range c.Parts {
		b = appendSigs(b, &c.Parts[i])
	}
	return b
}

// DecodeCertificate decodes Certificate.Encode's output strictly.
func DecodeCertificate(b []byte) (*Certificate, error) {
	r := wire.NewReader(b)
	c := &Certificate{Decision: readDecision(r, "certificate decision")}
	n := r.Count("certificate parts", 3, maxDecodeParts)
	if r.Err() == nil && n == 0 {
		r.Failf("certificate without parts")
	}
	c.Parts = readParts(r, n)
	if err := r.Done("certificate"); err != nil {
		return nil, err
	}
	return c, nil
}

// Relay carries f+1 signed votes of one involved group for another owner's
// transaction: the group recorded it from the owner's envelope, so the relay
// counts as the owner's (T3, K4).
type Relay struct {
	Decision Decision
	Votes    GroupSigs
}

// Call is a decoded call. Which fields are set depends on Kind.
type Call struct {
	Kind CallKind
	// Txn is the transaction's canonical encoding (every kind but
	// CallQuery).
	Txn []byte
	// Admin is the admin's signature of a metadata transaction (M5); nil
	// for data transactions.
	Admin *AdminSig
	// Relay (CallTxn) makes the call a relay (T3); nil otherwise.
	Relay *Relay
	// Cert (CallOutcome) is the outcome's certificate.
	Cert *Certificate
	// Decision is the outcome the owner releases with (CallRelease) or the
	// outcome the acknowledgements vouch for (CallProof).
	Decision Decision
	// Acks (CallProof) are f+1 signed acknowledgements of every involved
	// group other than the receiver, in strictly increasing group order.
	Acks []GroupSigs
	// From (CallQuery) is the lowest nonce to report.
	From uint64
}

// NewTxnCall returns the call that delivers a transaction encoding (with the
// admin signature of a metadata transaction, or nil).
func NewTxnCall(enc []byte, admin *AdminSig) []byte {
	return (&Call{Kind: CallTxn, Txn: enc, Admin: admin}).Encode()
}

// NewRelayCall returns the call that relays a transaction with f+1 signed
// votes of one group (T3, K4).
func NewRelayCall(enc []byte, admin *AdminSig, relay Relay) []byte {
	return (&Call{Kind: CallTxn, Txn: enc, Admin: admin, Relay: &relay}).Encode()
}

// NewOutcomeCall returns the call that terminates a transaction with a
// certificate (E10).
func NewOutcomeCall(enc []byte, admin *AdminSig, cert Certificate) []byte {
	return (&Call{Kind: CallOutcome, Txn: enc, Admin: admin, Cert: &cert}).Encode()
}

// NewReleaseCall returns the owner's release of a multi-group read-only
// transaction (E8).
func NewReleaseCall(enc []byte, outcome Decision) []byte {
	return (&Call{Kind: CallRelease, Txn: enc, Decision: outcome}).Encode()
}

// NewProofCall returns the termination proof of a multi-group update (W2).
func NewProofCall(enc []byte, admin *AdminSig, outcome Decision, acks []GroupSigs) []byte {
	return (&Call{Kind: CallProof, Txn: enc, Admin: admin, Decision: outcome, Acks: acks}).Encode()
}

// NewQueryCall returns the watermark query (W3).
func NewQueryCall(from uint64) []byte { return (&Call{Kind: CallQuery, From: from}).Encode() }

// The call layouts:
//
//	txn     := 'T' bytes(txn) admin relay
//	outcome := 'O' bytes(txn) admin decision(1) uvarint(#parts ≥ 1) { sigs }
//	release := 'R' bytes(txn) admin decision(1)
//	proof   := 'P' bytes(txn) admin decision(1) uvarint(#acks ≥ 1) { sigs }
//	query   := 'Q' uvarint(from)
//	admin   := 0 | 1 key(32) signature(64)
//	relay   := 0 | 1 decision(1) sigs
//	sigs    := uvarint(group) uvarint(#sigs ≥ 1) { uvarint(replica) bytes(signature) }
//
// A replica's signature is plain (64 bytes) or a tree signature
// (auth.ValidSignatureSize: 69 + 32·depth bytes, depth 1–16).
//
// Groups and replicas are strictly increasing. Decoding is strict and
// canonical like the transaction's.

// Encode returns the call's encoding.
func (c *Call) Encode() []byte {
	n := 1 + wire.BytesLen(len(c.Txn)) + 1 + 96 + 16
	if c.Relay != nil {
		n += sigsLen(&c.Relay.Votes)
	}
	if c.Cert != nil {
		for i := range c.Cert.Parts {
			n += sigsLen(&c.Cert.Parts[i])
		}
	}
	for i := range c.Acks {
		n += sigsLen(&c.Acks[i])
	}
	return c.AppendEncode(make([]byte, 0, n))
}

func sigsLen(s *GroupSigs) int {
	n := 10
	for i := range s.Sigs {
		n += 5 + wire.BytesLen(len(s.Sigs[i].Sig))
	}
	return n
}

// AppendEncode appends the call's encoding to b.
func (c *Call) AppendEncode(b []byte) []byte {
	b = append(b, byte(c.Kind))
	if c.Kind == CallQuery {
		return wire.AppendUvarint(b, c.From)
	}
	b = wire.AppendBytes(b, c.Txn)
	b = appendAdmin(b, c.Admin)
	switch c.Kind {
	case CallTxn:
		if c.Relay == nil {
			return append(b, 0)
		}
		b = append(b, 1, byte(c.Relay.Decision))
		return appendSigs(b, &c.Relay.Votes)
	case CallOutcome:
		var cert Certificate
		if c.Cert != nil {
			cert = *c.Cert
		}
		b = append(b, byte(cert.Decision))
		b = wire.AppendUvarint(b, uint64(len(cert.Parts)))
		for i := range cert.Parts {
			b = appendSigs(b, &cert.Parts[i])
		}
	case CallRelease:
		b = append(b, byte(c.Decision))
	case CallProof:
		b = append(b, byte(c.Decision))
		b = wire.AppendUvarint(b, uint64(len(c.Acks)))
		for i := range c.Acks {
			b = appendSigs(b, &c.Acks[i])
		}
	}
	return b
}

func appendAdmin(b []byte, a *AdminSig) []byte {
	if a == nil {
		return append(b, 0)
	}
	b = append(b, 1)
	b = append(b, a.Key[:]...)
	return append(b, a.Sig[:]...)
}

func appendSigs(b []byte, s *GroupSigs) []byte {
	b = wire.AppendUvarint(b, uint64(s.Group))
	b = wire.AppendUvarint(b, uint64(len(s.Sigs)))
	for _, sig := range s.Sigs {
		b = wire.AppendUvarint(b, uint64(sig.Replica))
		b = wire.AppendBytes(b, sig.Sig)
	}
	return b
}

// Bounds of the call decoder (far above any real cluster; they only keep a
// malformed call from making the decoder allocate).
const (
	maxDecodeSigs  = 1 << 10
	maxDecodeParts = 1 << 12
)

// DecodeCall decodes a call strictly. Its byte strings alias b. It checks the
// layout only: Validate checks limits, signatures and the rules of txn.md.
func DecodeCall(b []byte) (*Call, error) {
	r := wire.NewReader(b)
	c := &Call{Kind: CallKind(r.Byte("call kind"))}
	if r.Err() != nil {
		return nil, r.Err()
	}
	switch c.Kind {
	case CallQuery:
		c.From = r.Uvarint("from")
		if err := r.Done("query call"); err != nil {
			return nil, err
		}
		return c, nil
	case CallTxn, CallOutcome, CallRelease, CallProof:
	default:
		r.Failf("unknown call kind %#x", byte(c.Kind))
		return nil, r.Err()
	}
	c.Txn = r.Bytes("transaction", 0)
	c.Admin = readAdmin(r)
	switch c.Kind {
	case CallTxn:
		if r.Bool("relay flag") {
			c.Relay = &Relay{Decision: readDecision(r, "relay decision")}
			readSigs(r, &c.Relay.Votes)
		}
	case CallOutcome:
		c.Cert = &Certificate{Decision: readDecision(r, "certificate decision")}
		n := r.Count("certificate parts", 3, maxDecodeParts)
		if r.Err() == nil && n == 0 {
			r.Failf("certificate without parts")
		}
		c.Cert.Parts = readParts(r, n)
	case CallRelease:
		c.Decision = readDecision(r, "release outcome")
	case CallProof:
		c.Decision = readDecision(r, "proof outcome")
		n := r.Count("proof parts", 3, maxDecodeParts)
		if r.Err() == nil && n == 0 {
			r.Failf("proof without acknowledgements")
		}
		c.Acks = readParts(r, n)
	}
	if err := r.Done(c.Kind.String() + " call"); err != nil {
		return nil, err
	}
	return c, nil
}

func readDecision(r *wire.Reader, what string) Decision {
	d := Decision(r.Byte(what))
	if r.Err() == nil && !d.valid() {
		r.Failf("%s: %d is neither commit nor abort", what, d)
	}
	return d
}

func readAdmin(r *wire.Reader) *AdminSig {
	if !r.Bool("admin flag") {
		return nil
	}
	a := &AdminSig{}
	copy(a.Key[:], r.Fixed("admin key", OwnerSize))
	copy(a.Sig[:], r.Fixed("admin signature", SignatureSize))
	return a
}

func readParts(r *wire.Reader, n int) []GroupSigs {
	if r.Err() != nil {
		return nil
	}
	parts := make([]GroupSigs, n)
	for i := range parts {
		readSigs(r, &parts[i])
		if i > 0 && r.Err() == nil && parts[i].Group <= parts[i-1].Group {
			r.Failf("parts not in strictly increasing group order")
		}
		if r.Err() != nil {
			return nil
		}
	}
	return parts
}

func readSigs(r *wire.Reader, s *GroupSigs) {
	s.Group = bft.GroupID(r.Uvarint32("group"))
	n := r.Count("signatures", 2+SignatureSize, maxDecodeSigs)
	if r.Err() == nil && n == 0 {
		r.Failf("group %d: no signatures", s.Group)
	}
	if r.Err() != nil {
		return
	}
	s.Sigs = make([]ReplicaSig, n)
	for i := range s.Sigs {
		s.Sigs[i].Replica = bft.ReplicaID(r.Uvarint32("replica"))
		sig := r.Bytes("signature", auth.MaxTreeSignatureSize)
		if r.Err() == nil && !auth.ValidSignatureSize(len(sig)) {
			r.Failf("group %d: a signature of %d bytes is neither plain nor a tree signature", s.Group, len(sig))
		}
		s.Sigs[i].Sig = bytes.Clone(sig)
		if i > 0 && r.Err() == nil && s.Sigs[i].Replica <= s.Sigs[i-1].Replica {
			r.Failf("group %d: replicas not strictly increasing", s.Group)
		}
		if r.Err() != nil {
			return
		}
	}
}
