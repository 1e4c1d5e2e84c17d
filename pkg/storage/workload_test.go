package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// writer is what a Batch and the model share.
type writer interface {
	Set(ks Keyspace, key, value []byte) error
	Delete(ks Keyspace, key []byte) error
	DeleteRange(ks Keyspace, start, end []byte) error
}

var lastKey = []byte("last")

// workload writes batch id (from 1) of the crash tests' deterministic
// history. Every batch writes several keys whose values must agree (the
// batch id) and records the id in BFTState, so that a partially applied
// batch, a lost acknowledged batch or a reordering shows up as a difference
// from the model.
func workload(w writer, id uint64) error {
	val := func(tag string, n int) []byte {
		seed := fmt.Sprintf("%s-%d-", tag, id)
		return []byte(strings.Repeat(seed, n/len(seed)+1)[:n])
	}
	idText := fmt.Appendf(nil, "%d", id)
	errs := []error{
		w.Set(UserData, fmt.Appendf(nil, "batch/%08d", id), val("b", 20+int(id%50))),
		w.Set(ReplyCache, []byte("agree"), idText),
		w.Set(TxnRecords, fmt.Appendf(nil, "ring/%d", id%8), val("r", 30)),
		w.Delete(TxnRecords, fmt.Appendf(nil, "ring/%d", (id+4)%8)),
		w.Set(BFTState, seqKey(id), []byte("record")),
	}
	for i := range 4 {
		errs = append(errs, w.Set(UserData, fmt.Appendf(nil, "agree/%d", i), idText))
	}
	if id%7 == 0 {
		errs = append(errs, w.Set(Metadata, fmt.Appendf(nil, "big/%d", id%3), val("big", 40<<10)))
	}
	if id%10 == 0 {
		errs = append(errs, w.DeleteRange(BFTState, seqKey(0), seqKey(id-5)))
	}
	errs = append(errs, w.Set(BFTState, lastKey, binary.BigEndian.AppendUint64(nil, id)))
	return errors.Join(errs...)
}

// model is the expected store contents, keyed by engine key.
type model map[string]string

func (m model) Set(ks Keyspace, key, value []byte) error {
	m[string(MakeKey(ks, key))] = string(value)
	return nil
}

func (m model) Delete(ks Keyspace, key []byte) error {
	delete(m, string(MakeKey(ks, key)))
	return nil
}

func (m model) DeleteRange(ks Keyspace, start, end []byte) error {
	lo, hi := MakeKey(ks, start), MakeKey(ks, end)
	if end == nil {
		hi = []byte{byte(ks) + 1}
	}
	for k := range m {
		if bytes.Compare([]byte(k), lo) >= 0 && bytes.Compare([]byte(k), hi) < 0 {
			delete(m, k)
		}
	}
	return nil
}

func (m model) kvs() []kv {
	out := make([]kv, 0, len(m))
	for k, v := range m {
		out = append(out, kv{Keyspace(k[0]), k[1:], v})
	}
	return sortedKVs(out)
}

// modelAfter returns the contents after batches 1..n of the workload.
func modelAfter(n uint64) model {
	m := model{}
	for id := uint64(1); id <= n; id++ {
		if err := workload(m, id); err != nil {
			panic(err)
		}
	}
	return m
}

// lastBatch returns the id of the last batch the store holds (0 for none).
func lastBatch(r reader) (uint64, error) {
	v, err := r.Get(BFTState, lastKey)
	if errors.Is(err, ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("last batch record of %d bytes", len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// requireCrashConsistent checks a store reopened after a crash: it holds
// exactly the state after some batch n ≥ every acknowledged synced batch, and
// its persisted digest matches both its contents and the model's.
func requireCrashConsistent(t testing.TB, e *Engine, minAcked uint64) uint64 {
	t.Helper()
	n, err := lastBatch(e)
	require.NoError(t, err)
	require.GreaterOrEqual(t, n, minAcked, "an acknowledged synced batch was lost")
	want := modelAfter(n)
	require.Equal(t, want.kvs(), dump(t, e), "store is not the state after batch %d: a partial batch?", n)
	require.NoError(t, e.VerifyDigest())
	sum, err := e.Sum()
	require.NoError(t, err)
	wantDigest := digestOf(want.kvs())
	require.Equal(t, wantDigest.Sum(), sum)
	return n
}
