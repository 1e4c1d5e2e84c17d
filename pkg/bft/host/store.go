package host

import (
	"encoding/binary"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/bftpb"
	"github.com/augustus-db/augustus/pkg/storage"
)

// Reader reads the store (an Engine or a Snapshot).
type Reader interface {
	Get(ks storage.Keyspace, key []byte) ([]byte, error)
	Scan(ks storage.Keyspace, start, end []byte, limit int, fn func(key, value []byte) error) error
}

// Key layout.
//
// BFTState (replica-local, not digested):
//
//	"h"           HardState
//	"l" + key     a log record under bft.RecordKey
//
// ReplyCache (replicated, digested, moves with state transfer):
//
//	0x00 "applied"          the last executed sequence number (8 bytes)
//	0x01 client ts(8)       the result of an executed request (C2)
//	0x02 client             the client's low watermark (8 bytes)
var (
	keyHardState  = []byte("h")
	prefixLog     = byte('l')
	keyApplied    = []byte("\x00applied")
	prefixReply   = byte(0x01)
	prefixLowMark = byte(0x02)
)

func logKey(k []byte) []byte { return append([]byte{prefixLog}, k...) }

func replyKey(c bft.ClientID, ts uint64) []byte {
	b := make([]byte, 0, 1+len(c)+8)
	b = append(b, prefixReply)
	b = append(b, c...)
	return binary.BigEndian.AppendUint64(b, ts)
}

func lowKey(c bft.ClientID) []byte { return append([]byte{prefixLowMark}, c...) }

// persistReady writes step 1 of a Ready (P1) in one commit, never synced
// here: P1 asks for durability before a message leaves, and the loop holds
// the round's messages until a WAL sync covers this commit (durable.go).
// Pebble's WAL is sequential, so one sync makes every earlier commit durable
// too. A round that only records received messages and sends nothing needs
// no fsync of its own; losing it in a crash is the same as never having
// received them.
func persistReady(e *storage.Engine, rd *bft.Ready) error {
	b := e.NewBatch()
	defer b.Close()
	if rd.HardState != nil {
		v, err := proto.Marshal(rd.HardState)
		if err != nil {
			return fmt.Errorf("replica: encode hard state: %w", err)
		}
		if err := b.Set(storage.BFTState, keyHardState, v); err != nil {
			return err
		}
	}
	for _, rec := range rd.Records {
		v, err := proto.Marshal(rec.Record)
		if err != nil {
			return fmt.Errorf("replica: encode log record: %w", err)
		}
		if err := b.Set(storage.BFTState, logKey(rec.Key), v); err != nil {
			return err
		}
	}
	for _, del := range rd.Deletes {
		if err := b.DeleteRange(storage.BFTState, logKey(del.Start), logKey(del.End)); err != nil {
			return err
		}
	}
	if err := e.Commit(b, false); err != nil {
		return fmt.Errorf("replica: persist log: %w", err)
	}
	return nil
}

// writeClientUpdates stores the client-table changes of one execution (C2)
// in the same batch as its state changes (P2).
func writeClientUpdates(b *storage.Batch, ex *bft.Execution, results [][]byte) error {
	var v [8]byte
	for _, u := range ex.Clients {
		binary.BigEndian.PutUint64(v[:], u.Low)
		if err := b.Set(storage.ReplyCache, lowKey(u.Client), v[:]); err != nil {
			return err
		}
		for _, ts := range u.Delete {
			if err := b.Delete(storage.ReplyCache, replyKey(u.Client, ts)); err != nil {
				return err
			}
		}
		for _, p := range u.Put {
			if err := b.Set(storage.ReplyCache, replyKey(u.Client, p.Timestamp), results[p.Result]); err != nil {
				return err
			}
		}
	}
	binary.BigEndian.PutUint64(v[:], uint64(ex.Seq))
	return b.Set(storage.ReplyCache, keyApplied, v[:])
}

// loadApplied returns the last executed sequence number in r.
func loadApplied(r Reader) (bft.SeqNum, error) {
	v, err := r.Get(storage.ReplyCache, keyApplied)
	if errors.Is(err, storage.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("replica: read applied seq: %w", err)
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("replica: applied seq of %d bytes", len(v))
	}
	return bft.SeqNum(binary.BigEndian.Uint64(v)), nil
}

// loadClients reads the client table from r.
func loadClients(r Reader) ([]*bftpb.ClientRecord, error) {
	byClient := map[string]*bftpb.ClientRecord{}
	var order []string
	get := func(c []byte) *bftpb.ClientRecord {
		rec := byClient[string(c)]
		if rec == nil {
			rec = &bftpb.ClientRecord{Client: append([]byte(nil), c...)}
			byClient[string(c)] = rec
			order = append(order, string(c))
		}
		return rec
	}
	err := r.Scan(storage.ReplyCache, []byte{prefixLowMark}, []byte{prefixLowMark + 1}, 0, func(k, v []byte) error {
		if len(v) != 8 {
			return fmt.Errorf("replica: low watermark of %d bytes", len(v))
		}
		get(k[1:]).Low = binary.BigEndian.Uint64(v)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("replica: load client table: %w", err)
	}
	err = r.Scan(storage.ReplyCache, []byte{prefixReply}, []byte{prefixReply + 1}, 0, func(k, v []byte) error {
		if len(k) < 1+8 {
			return fmt.Errorf("replica: reply key of %d bytes", len(k))
		}
		c, ts := k[1:len(k)-8], binary.BigEndian.Uint64(k[len(k)-8:])
		rec := get(c)
		rec.Replies = append(rec.Replies, &bftpb.CachedReply{Timestamp: ts, Result: append([]byte(nil), v...)})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("replica: load client table: %w", err)
	}
	out := make([]*bftpb.ClientRecord, 0, len(order))
	for _, c := range order {
		out = append(out, byClient[c])
	}
	return out, nil
}

// loadRestored reads everything a restarted node needs (P3).
func loadRestored(e *storage.Engine) (*bft.Restored, error) {
	r := &bft.Restored{}
	v, err := e.Get(storage.BFTState, keyHardState)
	switch {
	case errors.Is(err, storage.ErrNotFound):
	case err != nil:
		return nil, fmt.Errorf("replica: read hard state: %w", err)
	default:
		hs := &bftpb.HardState{}
		if err := proto.Unmarshal(v, hs); err != nil {
			return nil, fmt.Errorf("replica: decode hard state: %w", err)
		}
		r.HardState = hs
	}
	err = e.Scan(storage.BFTState, []byte{prefixLog}, []byte{prefixLog + 1}, 0, func(_, v []byte) error {
		rec := &bftpb.LogRecord{}
		if err := proto.Unmarshal(v, rec); err != nil {
			return fmt.Errorf("replica: decode log record: %w", err)
		}
		r.Records = append(r.Records, rec)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if r.LastExecuted, err = loadApplied(e); err != nil {
		return nil, err
	}
	if r.Clients, err = loadClients(e); err != nil {
		return nil, err
	}
	return r, nil
}
