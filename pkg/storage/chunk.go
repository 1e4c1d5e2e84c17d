package storage

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// Entry is one element of the replicated state in a checkpoint chunk.
type Entry struct {
	Keyspace Keyspace
	Key      []byte
	Value    []byte
}

// Chunk is one self-contained piece of a checkpoint stream: the entries of
// the replicated keyspaces in a key range, in increasing (keyspace, key)
// order. Chunks of a stream are numbered from 0 and the last one is Final; a
// stream of the empty state is one Final chunk without entries.
type Chunk struct {
	Index   uint64
	Final   bool
	Entries []Entry
}

// The chunk encoding, version 1 (integers are unsigned varints in their
// shortest form):
//
//	version   1 byte  = chunkVersion
//	flags     1 byte  bit 0: final; other bits zero
//	index     uvarint
//	count     uvarint
//	count × { keyspace 1 byte, len(key) uvarint, key, len(value) uvarint, value }
//
// Nothing may follow the last entry.
const (
	chunkVersion   = 1
	chunkFlagFinal = 1

	// minEncodedEntry is the smallest encoded entry: keyspace, a one-byte
	// key and its length, an empty value's length.
	minEncodedEntry = 4
	// maxChunkHeader bounds the encoded header (version, flags, two
	// uvarints).
	maxChunkHeader = 2 + 2*binary.MaxVarintLen64
)

// encodedEntrySize is the encoded size of an entry with the given key and
// value lengths.
func encodedEntrySize(keyLen, valueLen int) int {
	return 1 + uvarintLen(uint64(keyLen)) + keyLen + uvarintLen(uint64(valueLen)) + valueLen
}

func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

// Size returns the length of the chunk's encoding.
func (c Chunk) Size() int {
	n := 2 + uvarintLen(c.Index) + uvarintLen(uint64(len(c.Entries)))
	for i := range c.Entries {
		n += encodedEntrySize(len(c.Entries[i].Key), len(c.Entries[i].Value))
	}
	return n
}

// Marshal returns the chunk's encoding.
func (c Chunk) Marshal() []byte {
	return c.AppendMarshal(make([]byte, 0, c.Size()))
}

// AppendMarshal appends the chunk's encoding to dst.
func (c Chunk) AppendMarshal(dst []byte) []byte {
	var flags byte
	if c.Final {
		flags |= chunkFlagFinal
	}
	dst = append(dst, chunkVersion, flags)
	dst = binary.AppendUvarint(dst, c.Index)
	dst = binary.AppendUvarint(dst, uint64(len(c.Entries)))
	for i := range c.Entries {
		e := &c.Entries[i]
		dst = append(dst, byte(e.Keyspace))
		dst = binary.AppendUvarint(dst, uint64(len(e.Key)))
		dst = append(dst, e.Key...)
		dst = binary.AppendUvarint(dst, uint64(len(e.Value)))
		dst = append(dst, e.Value...)
	}
	return dst
}

// Clone returns a deep copy of the chunk, which stays valid after the buffers
// it was read from are reused.
func (c Chunk) Clone() Chunk {
	n := 0
	for i := range c.Entries {
		n += len(c.Entries[i].Key) + len(c.Entries[i].Value)
	}
	buf := make([]byte, 0, n)
	out := Chunk{Index: c.Index, Final: c.Final, Entries: make([]Entry, len(c.Entries))}
	for i, e := range c.Entries {
		buf = append(buf, e.Key...)
		k := buf[len(buf)-len(e.Key):]
		buf = append(buf, e.Value...)
		v := buf[len(buf)-len(e.Value):]
		out.Entries[i] = Entry{Keyspace: e.Keyspace, Key: k, Value: v}
	}
	return out
}

// Validate checks what a chunk may contain on its own: at most
// MaxChunkEntries entries of replicated keyspaces, keys and values within
// limits, entries in strictly increasing (keyspace, key) order.
func (c Chunk) Validate() error {
	if len(c.Entries) > MaxChunkEntries {
		return fmt.Errorf("%w: chunk %d has %d entries (max %d)", ErrInvalidChunk, c.Index, len(c.Entries), MaxChunkEntries)
	}
	for i := range c.Entries {
		e := &c.Entries[i]
		if err := validateEntry(e); err != nil {
			return fmt.Errorf("%w: chunk %d entry %d: %w", ErrInvalidChunk, c.Index, i, err)
		}
		if i > 0 && compareEntries(&c.Entries[i-1], e) >= 0 {
			return fmt.Errorf("%w: chunk %d entry %d: keys not in strictly increasing order", ErrInvalidChunk, c.Index, i)
		}
	}
	return nil
}

func validateEntry(e *Entry) error {
	if !e.Keyspace.Replicated() {
		return fmt.Errorf("%w: %s is not replicated", ErrInvalidKeyspace, e.Keyspace)
	}
	if err := checkKey(e.Key); err != nil {
		return err
	}
	return checkValue(e.Value)
}

// compareEntries orders entries as their engine keys sort.
func compareEntries(a, b *Entry) int {
	if a.Keyspace != b.Keyspace {
		if a.Keyspace < b.Keyspace {
			return -1
		}
		return 1
	}
	return bytes.Compare(a.Key, b.Key)
}

// UnmarshalChunk decodes and validates an encoded chunk. It accepts only the
// canonical encoding Marshal produces, so that decoding and re-encoding give
// the same bytes. The entries' keys and values alias data. Untrusted input
// yields an error wrapping ErrInvalidChunk, never a panic.
func UnmarshalChunk(data []byte) (Chunk, error) {
	var c Chunk
	if len(data) > MaxChunkSize {
		return c, fmt.Errorf("%w: %d bytes (max %d)", ErrInvalidChunk, len(data), MaxChunkSize)
	}
	if len(data) < 2 {
		return c, fmt.Errorf("%w: truncated header", ErrInvalidChunk)
	}
	if data[0] != chunkVersion {
		return c, fmt.Errorf("%w: unknown version %d", ErrInvalidChunk, data[0])
	}
	if data[1]&^chunkFlagFinal != 0 {
		return c, fmt.Errorf("%w: unknown flags %#02x", ErrInvalidChunk, data[1])
	}
	c.Final = data[1]&chunkFlagFinal != 0
	d := decoder{buf: data, off: 2}
	var err error
	if c.Index, err = d.uvarint("index"); err != nil {
		return Chunk{}, err
	}
	count, err := d.uvarint("entry count")
	if err != nil {
		return Chunk{}, err
	}
	if count > MaxChunkEntries {
		return Chunk{}, fmt.Errorf("%w: %d entries (max %d)", ErrInvalidChunk, count, MaxChunkEntries)
	}
	if count > uint64(d.remaining()/minEncodedEntry) {
		return Chunk{}, fmt.Errorf("%w: %d entries cannot fit in %d bytes", ErrInvalidChunk, count, d.remaining())
	}
	if count > 0 {
		c.Entries = make([]Entry, count)
	}
	for i := range c.Entries {
		e := &c.Entries[i]
		ks, err := d.byte("keyspace")
		if err != nil {
			return Chunk{}, err
		}
		e.Keyspace = Keyspace(ks)
		if e.Key, err = d.bytes("key", MaxKeySize); err != nil {
			return Chunk{}, err
		}
		if e.Value, err = d.bytes("value", MaxValueSize); err != nil {
			return Chunk{}, err
		}
	}
	if d.remaining() != 0 {
		return Chunk{}, fmt.Errorf("%w: %d trailing bytes", ErrInvalidChunk, d.remaining())
	}
	if err := c.Validate(); err != nil {
		return Chunk{}, err
	}
	return c, nil
}

// decoder reads a chunk encoding with bounds checks.
type decoder struct {
	buf []byte
	off int
}

func (d *decoder) remaining() int { return len(d.buf) - d.off }

func (d *decoder) byte(what string) (byte, error) {
	if d.remaining() < 1 {
		return 0, fmt.Errorf("%w: truncated %s at offset %d", ErrInvalidChunk, what, d.off)
	}
	b := d.buf[d.off]
	d.off++
	return b, nil
}

func (d *decoder) uvarint(what string) (uint64, error) {
	x, n := binary.Uvarint(d.buf[d.off:])
	switch {
	case n == 0:
		return 0, fmt.Errorf("%w: truncated %s at offset %d", ErrInvalidChunk, what, d.off)
	case n < 0:
		return 0, fmt.Errorf("%w: %s overflows at offset %d", ErrInvalidChunk, what, d.off)
	case n > 1 && d.buf[d.off+n-1] == 0:
		return 0, fmt.Errorf("%w: non-canonical %s at offset %d", ErrInvalidChunk, what, d.off)
	}
	d.off += n
	return x, nil
}

// bytes reads a length-prefixed byte string of at most limit bytes; the
// result aliases the input and has no spare capacity.
func (d *decoder) bytes(what string, limit int) ([]byte, error) {
	n, err := d.uvarint(what + " length")
	if err != nil {
		return nil, err
	}
	if n > uint64(limit) {
		return nil, fmt.Errorf("%w: %s of %d bytes at offset %d (max %d)", ErrInvalidChunk, what, n, d.off, limit)
	}
	if n > uint64(d.remaining()) {
		return nil, fmt.Errorf("%w: truncated %s at offset %d", ErrInvalidChunk, what, d.off)
	}
	b := d.buf[d.off : d.off+int(n) : d.off+int(n)]
	d.off += int(n)
	return b, nil
}
