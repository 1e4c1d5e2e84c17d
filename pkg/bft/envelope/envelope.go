// Package envelope encodes what a client packs into one request envelope —
// the calls of many concurrent callers (pbft.md C1, DESIGN.md §3.1) — and the
// results a replica returns for them, one per call.
//
// The PBFT core treats a request's payload as opaque bytes; the group client
// (pkg/bft/client) and the replica runtime (pkg/bft/replica) agree on this
// format, so an application sees single calls and returns single results.
//
// Layout: a tag byte ('C' calls, 'R' results), a uvarint count, then per
// element a uvarint length and the bytes. Decoding is strict (no trailing
// bytes, bounded counts and lengths) because the bytes come from the network.
// This package imports only the standard library.
package envelope

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

const (
	tagCalls    = 'C'
	tagResults  = 'R'
	tagOutcomes = 'S'
)

// MaxElements bounds the calls (or results) in one envelope.
const MaxElements = 1 << 16

// ErrMalformed is returned for bytes that are not a valid envelope.
var ErrMalformed = errors.New("envelope: malformed")

// AppendCalls appends the encoding of calls to dst.
func AppendCalls(dst []byte, calls [][]byte) []byte { return appendList(dst, tagCalls, calls) }

// EncodeCalls encodes calls.
func EncodeCalls(calls [][]byte) []byte {
	return appendList(make([]byte, 0, Size(calls)), tagCalls, calls)
}

// EncodeResults encodes results.
func EncodeResults(results [][]byte) []byte {
	return appendList(make([]byte, 0, Size(results)), tagResults, results)
}

// Size returns the encoded size of a list.
func Size(elems [][]byte) int {
	n := 1 + binary.MaxVarintLen64
	for _, e := range elems {
		n += binary.MaxVarintLen64 + len(e)
	}
	return n
}

func appendList(dst []byte, tag byte, elems [][]byte) []byte {
	dst = append(dst, tag)
	dst = binary.AppendUvarint(dst, uint64(len(elems)))
	for _, e := range elems {
		dst = binary.AppendUvarint(dst, uint64(len(e)))
		dst = append(dst, e...)
	}
	return dst
}

// DecodeCalls decodes calls; the returned slices alias b.
func DecodeCalls(b []byte) ([][]byte, error) { return decodeList(b, tagCalls) }

// DecodeResults decodes results; the returned slices alias b.
func DecodeResults(b []byte) ([][]byte, error) { return decodeList(b, tagResults) }

// Statuses of a call in an outcome list.
const (
	statusOK       = 0
	statusRejected = 1
)

// EncodeOutcomes encodes the results of an envelope some of whose calls the
// application's stateless validation rejected: rejected[i] != "" marks call
// i as rejected with that reason (results[i] is then ignored). Layout: the
// tag 'S', a uvarint count, then per call a status byte (0 result, 1
// rejected) and a uvarint length and the bytes (the result or the reason).
// An envelope without a rejected call is encoded by EncodeResults instead.
func EncodeOutcomes(results [][]byte, rejected []string) []byte {
	n := 1 + binary.MaxVarintLen64
	for i := range results {
		n += 1 + binary.MaxVarintLen64 + len(results[i]) + len(rejected[i])
	}
	b := make([]byte, 0, n)
	b = append(b, tagOutcomes)
	b = binary.AppendUvarint(b, uint64(len(results)))
	for i := range results {
		if rejected[i] != "" {
			b = append(b, statusRejected)
			b = binary.AppendUvarint(b, uint64(len(rejected[i])))
			b = append(b, rejected[i]...)
			continue
		}
		b = append(b, statusOK)
		b = binary.AppendUvarint(b, uint64(len(results[i])))
		b = append(b, results[i]...)
	}
	return b
}

// EncodeExecuted encodes an envelope's results from the results of the
// calls that executed, in call order, and rejected, one reason per call (""
// for a call that executed; nil if none was rejected): EncodeResults when
// no call was rejected, EncodeOutcomes otherwise. The runtime and the test
// worlds that stand in for it build their replies with it.
func EncodeExecuted(executed [][]byte, rejected []string) []byte {
	if !slices.ContainsFunc(rejected, func(r string) bool { return r != "" }) {
		return EncodeResults(executed)
	}
	vals, k := make([][]byte, len(rejected)), 0
	for i, r := range rejected {
		if r == "" {
			vals[i] = executed[k]
			k++
		}
	}
	return EncodeOutcomes(vals, rejected)
}

// DecodeOutcomes decodes the results of an envelope in either encoding
// (EncodeResults or EncodeOutcomes): one value per call, and per call the
// reason it was rejected ("" for a result). The returned slices alias b.
func DecodeOutcomes(b []byte) (values [][]byte, rejected []string, err error) {
	if len(b) > 0 && b[0] == tagResults {
		values, err = decodeList(b, tagResults)
		if err != nil {
			return nil, nil, err
		}
		return values, make([]string, len(values)), nil
	}
	if len(b) == 0 || b[0] != tagOutcomes {
		return nil, nil, fmt.Errorf("%w: missing tag %q or %q", ErrMalformed, tagResults, tagOutcomes)
	}
	b = b[1:]
	count, n := uvarint(b)
	if n <= 0 || count > MaxElements || count > uint64(len(b)-n)/2 {
		return nil, nil, fmt.Errorf("%w: bad element count", ErrMalformed)
	}
	b = b[n:]
	values, rejected = make([][]byte, count), make([]string, count)
	for i := uint64(0); i < count; i++ {
		if len(b) == 0 || b[0] > statusRejected {
			return nil, nil, fmt.Errorf("%w: element %d has no valid status", ErrMalformed, i)
		}
		status := b[0]
		b = b[1:]
		l, n := uvarint(b)
		if n <= 0 || l > uint64(len(b)-n) {
			return nil, nil, fmt.Errorf("%w: element %d overruns the envelope", ErrMalformed, i)
		}
		b = b[n:]
		if status == statusRejected {
			if l == 0 {
				return nil, nil, fmt.Errorf("%w: element %d rejected without a reason", ErrMalformed, i)
			}
			rejected[i] = string(b[:l])
		} else {
			values[i] = b[:l:l]
		}
		b = b[l:]
	}
	if len(b) != 0 {
		return nil, nil, fmt.Errorf("%w: %d trailing bytes", ErrMalformed, len(b))
	}
	return values, rejected, nil
}

func decodeList(b []byte, tag byte) ([][]byte, error) {
	if len(b) == 0 || b[0] != tag {
		return nil, fmt.Errorf("%w: missing tag %q", ErrMalformed, tag)
	}
	b = b[1:]
	count, n := uvarint(b)
	if n <= 0 || count > MaxElements {
		return nil, fmt.Errorf("%w: bad element count", ErrMalformed)
	}
	b = b[n:]
	if count > uint64(len(b)) { // every element takes at least one byte
		return nil, fmt.Errorf("%w: %d elements in %d bytes", ErrMalformed, count, len(b))
	}
	out := make([][]byte, 0, count)
	for i := uint64(0); i < count; i++ {
		l, n := uvarint(b)
		if n <= 0 || l > uint64(len(b)-n) {
			return nil, fmt.Errorf("%w: element %d overruns the envelope", ErrMalformed, i)
		}
		b = b[n:]
		out = append(out, b[:l:l])
		b = b[l:]
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrMalformed, len(b))
	}
	return out, nil
}

// uvarint decodes a canonical (shortest) uvarint, so every envelope has one
// encoding.
func uvarint(b []byte) (uint64, int) {
	v, n := binary.Uvarint(b)
	if n > 0 && n != uvarintLen(v) {
		return 0, -1
	}
	return v, n
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}
