package auth

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
)

// Signature trees: one Ed25519 signature for many messages.
//
// A replica signs the votes and acknowledgements of the transaction layer
// after execution (DESIGN.md §3.2), one per multi-group call, and every
// replica of the other groups verifies f+1 of them in each certificate and
// termination proof: at 100 % multi-group transactions, signing and verifying
// were a third of a replica's CPU (docs/benchmarks/txn.md). The replies of
// one executed batch are signed together instead: the signer hashes the
// messages into a Merkle tree, signs its root once, and gives each message
// the root's signature with the path from its leaf to the root. A verifier
// folds the path into the root and checks the root's signature — which its
// signature cache (sigcache.go) or batch (batch.go) holds once for every
// message of the tree, so the certificates of the transactions a group voted
// on in one batch cost the other groups one verification per signer, not
// one per transaction.
//
// Layout of a tree signature (SignTree, TreeRoot):
//
//	sig(64) depth(1) index(4, big-endian) sibling(32) × depth
//
// sig is the Ed25519 signature of
//
//	"AUGUSTUS-SIGTREE-v1\0" root(32)
//
// where leaf = SHA-256(0x00 | message), node = SHA-256(0x01 | left | right)
// and the odd places of a level hold SHA-256(0x02); bit i of index (least significant first) says whether the node at
// height i is a right child. The two prefixes keep a leaf from passing for
// an inner node (and the reverse), and the root's own tag keeps a root
// signature from passing for any other signed bytes of Augustus (all begin
// with a different "AUGUSTUS-…" tag). A verifier that accepts a tree
// signature of m by replica r therefore knows, by the collision resistance
// of SHA-256, that r signed a tree with m as a leaf, which r does only for
// messages it means to sign. A plain 64-byte signature is the depth-0 case
// and is checked as before: a signer with a single message to sign signs it
// alone, and everything else of Augustus still signs plain.
//
// Verification of a tree signature is deterministic, so replicas that check
// a certificate reach the same verdict (txn.md T4) whether a tree's root was
// in their cache or not.

// TreeTag starts the bytes a tree's root signature covers.
const TreeTag = "AUGUSTUS-SIGTREE-v1\x00"

// MaxTreeDepth bounds the depth of a tree signature: 2^16 leaves, far above
// any batch a replica signs, and 16 hashes to check a path. A deeper path is
// malformed (it would only cost the verifier hashing).
const MaxTreeDepth = 16

// MaxTreeSignatureSize is the size of a tree signature of MaxTreeDepth.
const MaxTreeSignatureSize = treeHeader + MaxTreeDepth*sha256.Size

const treeHeader = ed25519.SignatureSize + 1 + 4

// ErrMalformedTreeSignature marks a signature that is neither a plain
// Ed25519 signature nor a well-formed tree signature.
var ErrMalformedTreeSignature = errors.New("auth: malformed tree signature")

// TreeSignatureSize returns the size of a tree signature of depth d.
func TreeSignatureSize(d int) int { return treeHeader + d*sha256.Size }

// ValidSignatureSize reports whether n is the size of a plain signature or of
// a tree signature of depth 1..MaxTreeDepth: what a format that carries
// replica signatures may accept before any check.
func ValidSignatureSize(n int) bool {
	if n == ed25519.SignatureSize {
		return true
	}
	d := (n - treeHeader) / sha256.Size
	return n > treeHeader && d >= 1 && d <= MaxTreeDepth && n == TreeSignatureSize(d)
}

// SignTree signs msgs with sign, which must be a deterministic signer such as
// Signer.Sign: one plain signature if there is one message, else one tree
// signature per message, all sharing the signature of their tree's root.
// Messages may repeat. It panics if msgs has more than 2^MaxTreeDepth
// messages (callers sign what one batch produced, and cap it).
func SignTree(sign func([]byte) []byte, msgs [][]byte) [][]byte {
	switch len(msgs) {
	case 0:
		return nil
	case 1:
		return [][]byte{sign(msgs[0])}
	}
	if len(msgs) > 1<<MaxTreeDepth {
		panic(fmt.Sprintf("auth: SignTree of %d messages (at most %d)", len(msgs), 1<<MaxTreeDepth))
	}
	depth := 0
	for 1<<depth < len(msgs) {
		depth++
	}
	// levels[h] holds the nodes at height h; a level of odd length is
	// padded with padHash, so every leaf has depth depth. (Padding with a
	// copy of the last node, as Bitcoin does, would let one leaf's path
	// verify under two indexes.)
	levels := make([][][sha256.Size]byte, depth+1)
	leaves := make([][sha256.Size]byte, len(msgs))
	for i, m := range msgs {
		leaves[i] = leafHash(m)
	}
	levels[0] = leaves
	for h := 0; h < depth; h++ {
		cur := levels[h]
		if len(cur)%2 == 1 {
			cur = append(cur, padHash)
			levels[h] = cur
		}
		next := make([][sha256.Size]byte, len(cur)/2)
		for i := range next {
			next[i] = nodeHash(&cur[2*i], &cur[2*i+1])
		}
		levels[h+1] = next
	}
	root := levels[depth][0]
	rootSig := sign(rootBytes(&root))
	size := TreeSignatureSize(depth)
	all := make([]byte, size*len(msgs))
	out := make([][]byte, len(msgs))
	for i := range msgs {
		s := all[i*size : (i+1)*size : (i+1)*size]
		copy(s, rootSig)
		s[ed25519.SignatureSize] = byte(depth)
		binary.BigEndian.PutUint32(s[ed25519.SignatureSize+1:], uint32(i))
		idx := i
		for h := 0; h < depth; h++ {
			copy(s[treeHeader+h*sha256.Size:], levels[h][idx^1][:])
			idx >>= 1
		}
		out[i] = s
	}
	return out
}

// TreeRoot returns what a signature of msg must be checked as: for a plain
// signature, msg and sig themselves; for a tree signature, the bytes its
// root's signature covers and that signature (the first 64 bytes of sig).
// It fails for a signature of any other size, a depth outside
// 1..MaxTreeDepth or an index outside the tree; it checks no signature.
func TreeRoot(msg, sig []byte) (signed, rootSig []byte, err error) {
	if len(sig) == ed25519.SignatureSize {
		return msg, sig, nil
	}
	if len(sig) < treeHeader {
		return nil, nil, fmt.Errorf("%w: %d bytes", ErrMalformedTreeSignature, len(sig))
	}
	depth := int(sig[ed25519.SignatureSize])
	if depth < 1 || depth > MaxTreeDepth {
		return nil, nil, fmt.Errorf("%w: depth %d (1 to %d)", ErrMalformedTreeSignature, depth, MaxTreeDepth)
	}
	if len(sig) != TreeSignatureSize(depth) {
		return nil, nil, fmt.Errorf("%w: %d bytes for depth %d, want %d", ErrMalformedTreeSignature, len(sig), depth, TreeSignatureSize(depth))
	}
	idx := binary.BigEndian.Uint32(sig[ed25519.SignatureSize+1:])
	if uint64(idx) >= 1<<depth {
		// Higher bits would be ignored, so the same path would have many
		// encodings; one is allowed.
		return nil, nil, fmt.Errorf("%w: index %d of a tree of depth %d", ErrMalformedTreeSignature, idx, depth)
	}
	node := leafHash(msg)
	for h := 0; h < depth; h++ {
		var sib [sha256.Size]byte
		copy(sib[:], sig[treeHeader+h*sha256.Size:])
		if idx&1 == 0 {
			node = nodeHash(&node, &sib)
		} else {
			node = nodeHash(&sib, &node)
		}
		idx >>= 1
	}
	return rootBytes(&node), sig[:ed25519.SignatureSize], nil
}

// padHash fills the odd places of a tree: no message's leaf and no inner
// node hashes to it (different prefix).
var padHash = sha256.Sum256([]byte{2})

func leafHash(m []byte) [sha256.Size]byte {
	h := sha256.New()
	h.Write([]byte{0})
	h.Write(m)
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

func nodeHash(l, r *[sha256.Size]byte) [sha256.Size]byte {
	var b [1 + 2*sha256.Size]byte
	b[0] = 1
	copy(b[1:], l[:])
	copy(b[1+sha256.Size:], r[:])
	return sha256.Sum256(b[:])
}

func rootBytes(root *[sha256.Size]byte) []byte {
	b := make([]byte, 0, len(TreeTag)+sha256.Size)
	b = append(b, TreeTag...)
	return append(b, root[:]...)
}
