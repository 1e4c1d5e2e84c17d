package storage

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func TestLaneArithmeticMatchesPerLaneModularArithmetic(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a := rapid.Uint64().Draw(t, "a")
		b := rapid.Uint64().Draw(t, "b")
		sum, diff := addLanes16(a, b), subLanes16(a, b)
		for j := range 4 {
			la, lb := uint16(a>>(16*j)), uint16(b>>(16*j))
			if got := uint16(sum >> (16 * j)); got != la+lb {
				t.Fatalf("lane %d: %#x + %#x = %#x, SWAR gave %#x", j, la, lb, la+lb, got)
			}
			if got := uint16(diff >> (16 * j)); got != la-lb {
				t.Fatalf("lane %d: %#x - %#x = %#x, SWAR gave %#x", j, la, lb, la-lb, got)
			}
		}
	})
}

func TestDigestEncodingIsLittleEndianLanesAndSumIsSHA256OfIt(t *testing.T) {
	var d Digest
	d.Add(UserData, []byte("k"), []byte("v"))
	enc := d.Bytes()
	require.Len(t, enc, DigestSize)
	for i := range DigestLanes {
		require.Equal(t, binary.LittleEndian.Uint16(enc[2*i:]), d.Lane(i))
	}
	require.Equal(t, sha256.Sum256(enc), d.Sum())
	back, err := ParseDigest(enc)
	require.NoError(t, err)
	require.Equal(t, d, back)
	_, err = ParseDigest(enc[:DigestSize-1])
	require.ErrorIs(t, err, ErrInvalidArgument)
}

func TestElementExpansionFollowsTheDocumentedEncoding(t *testing.T) {
	// Rebuild the expansion of one element from the encoding documented on
	// Digest, independently of elementHasher.
	msg := []byte("augustus/storage/lthash/v2\x00")
	msg = append(msg, byte(UserData))
	msg = binary.BigEndian.AppendUint32(msg, 3)
	msg = append(msg, "key"...)
	msg = binary.BigEndian.AppendUint32(msg, 5)
	msg = append(msg, "value"...)
	seed := sha256.Sum256(msg)
	block, err := aes.NewCipher(seed[:])
	require.NoError(t, err)
	want := make([]byte, DigestSize)
	cipher.NewCTR(block, make([]byte, aes.BlockSize)).XORKeyStream(want, make([]byte, DigestSize))

	var d Digest
	d.Add(UserData, []byte("key"), []byte("value"))
	require.Equal(t, want, d.Bytes(), "one element's digest is its expansion")

	// Pin the result too: changing the construction changes every
	// replica's digest and needs a new format version.
	s := d.Sum()
	require.Equal(t, "ce74e103abfddcc2", d.String(), "full sum %x", s)
}

func TestElementEncodingSeparatesKeyspaceKeyAndValue(t *testing.T) {
	// Shifting bytes between key and value, or changing only the keyspace,
	// must give a different element.
	digest := func(ks Keyspace, k, v string) Digest {
		var d Digest
		d.Add(ks, []byte(k), []byte(v))
		return d
	}
	base := digest(UserData, "ab", "c")
	require.NotEqual(t, base, digest(UserData, "a", "bc"))
	require.NotEqual(t, base, digest(Metadata, "ab", "c"))
	require.NotEqual(t, base, digest(UserData, "ab", "c\x00"))
	require.NotEqual(t, digest(UserData, "k", ""), Digest{}, "an empty value is an element")
}

func TestDigestAddThenRemoveAndCombine(t *testing.T) {
	var d, a, b Digest
	d.Add(UserData, []byte("x"), []byte("1"))
	before := d
	d.Add(ReplyCache, []byte("y"), []byte("2"))
	d.Remove(ReplyCache, []byte("y"), []byte("2"))
	require.Equal(t, before, d)

	a.Add(UserData, []byte("x"), []byte("1"))
	b.Add(TxnRecords, []byte("z"), []byte("3"))
	var both Digest
	both.Add(TxnRecords, []byte("z"), []byte("3"))
	both.Add(UserData, []byte("x"), []byte("1"))
	a.Combine(&b)
	require.Equal(t, both, a)
}

func TestElementExpansionAllocatesOnlyTheCipherState(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	// The seed hashing reuses the hasher; only crypto/aes's key schedule
	// and crypto/cipher's counter-mode state are allocated per element
	// (neither can be re-keyed in place), whatever the element's size.
	h := newElementHasher()
	var d Digest
	allocsFor := func(valueSize int) float64 {
		key, value := []byte("key"), make([]byte, valueSize)
		return testing.AllocsPerRun(100, func() {
			d.addLanes(h.expand(UserData, key, value))
		})
	}
	small, large := allocsFor(100), allocsFor(64<<10)
	require.LessOrEqual(t, small, 3.0)
	require.Equal(t, small, large, "allocations must not grow with the element")
}
