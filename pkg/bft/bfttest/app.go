package bfttest

import (
	"crypto/sha256"
	"encoding/binary"
	"sort"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/bftpb"
)

// App is the reference application: a map of hash chains. An operation
// names a key and a value; executing it sets the key's chain to
// SHA-256(chain || value) and returns the new chain and count, so any
// difference in order shows in the results. The client table (C2) is part
// of its state, stored from Execution.Clients exactly as a real host does.
type App struct {
	chains       map[uint64]chain
	clients      map[bft.ClientID]*clientRec
	LastExecuted bft.SeqNum
}

type chain struct {
	hash  [32]byte
	count uint64
}

type clientRec struct {
	low     uint64
	replies map[uint64][]byte
}

// NewApp returns an empty application.
func NewApp() *App {
	return &App{chains: make(map[uint64]chain), clients: make(map[bft.ClientID]*clientRec)}
}

// Op encodes an operation.
func Op(key uint64, value []byte) []byte {
	return append(binary.BigEndian.AppendUint64(nil, key), value...)
}

// Execute runs one Execution and applies its client updates; it returns one
// result per executed request.
func (a *App) Execute(ex *bft.Execution) [][]byte {
	results := make([][]byte, len(ex.Execute))
	for i, r := range ex.Execute {
		var key uint64
		if len(r.Payload) >= 8 {
			key = binary.BigEndian.Uint64(r.Payload)
		}
		c := a.chains[key]
		h := sha256.New()
		h.Write(c.hash[:])
		h.Write(r.Payload)
		copy(c.hash[:], h.Sum(nil))
		c.count++
		a.chains[key] = c
		results[i] = binary.BigEndian.AppendUint64(append([]byte(nil), c.hash[:8]...), c.count)
	}
	for _, u := range ex.Clients {
		rec := a.clients[u.Client]
		if rec == nil {
			rec = &clientRec{replies: make(map[uint64][]byte)}
			a.clients[u.Client] = rec
		}
		rec.low = u.Low
		for _, ts := range u.Delete {
			delete(rec.replies, ts)
		}
		for _, p := range u.Put {
			rec.replies[p.Timestamp] = results[p.Result]
		}
	}
	a.LastExecuted = ex.Seq
	return results
}

// ClientRecords returns the client table as the core restores it.
func (a *App) ClientRecords() []*bftpb.ClientRecord {
	ids := make([]string, 0, len(a.clients))
	for c := range a.clients {
		ids = append(ids, string(c))
	}
	sort.Strings(ids)
	out := make([]*bftpb.ClientRecord, 0, len(ids))
	for _, id := range ids {
		rec := a.clients[bft.ClientID(id)]
		cr := &bftpb.ClientRecord{Client: []byte(id), Low: rec.low}
		ts := make([]uint64, 0, len(rec.replies))
		for t := range rec.replies {
			ts = append(ts, t)
		}
		sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
		for _, t := range ts {
			cr.Replies = append(cr.Replies, &bftpb.CachedReply{Timestamp: t, Result: rec.replies[t]})
		}
		out = append(out, cr)
	}
	return out
}

// Digest is the state digest: chains and client table, canonically encoded.
func (a *App) Digest() []byte {
	h := sha256.New()
	keys := make([]uint64, 0, len(a.chains))
	for k := range a.chains {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	var b []byte
	for _, k := range keys {
		c := a.chains[k]
		b = binary.BigEndian.AppendUint64(b[:0], k)
		b = append(b, c.hash[:]...)
		b = binary.BigEndian.AppendUint64(b, c.count)
		h.Write(b)
	}
	for _, cr := range a.ClientRecords() {
		b = binary.BigEndian.AppendUint32(b[:0], uint32(len(cr.Client)))
		b = append(b, cr.Client...)
		b = binary.BigEndian.AppendUint64(b, cr.Low)
		h.Write(b)
		for _, r := range cr.Replies {
			b = binary.BigEndian.AppendUint64(b[:0], r.Timestamp)
			b = binary.BigEndian.AppendUint32(b, uint32(len(r.Result)))
			b = append(b, r.Result...)
			h.Write(b)
		}
	}
	return h.Sum(nil)
}

// Clone returns a deep copy (a snapshot for state transfer).
func (a *App) Clone() *App {
	c := NewApp()
	for k, v := range a.chains {
		c.chains[k] = v
	}
	for id, rec := range a.clients {
		nr := &clientRec{low: rec.low, replies: make(map[uint64][]byte, len(rec.replies))}
		for t, r := range rec.replies {
			nr.replies[t] = r
		}
		c.clients[id] = nr
	}
	c.LastExecuted = a.LastExecuted
	return c
}

// Corrupt changes the state (a Byzantine peer's bad snapshot).
func (a *App) Corrupt() {
	c := a.chains[0]
	c.count += 1000
	a.chains[0] = c
}
