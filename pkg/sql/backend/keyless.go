package backend

import (
	"bytes"
	"crypto/sha256"
	"fmt"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/augustus-db/augustus/pkg/sql/rowenc"
	"github.com/augustus-db/augustus/pkg/sql/session"
)

// Keyless tables (no PRIMARY KEY; MySQL allows them, SQLite's logic tests
// use them). A row is keyed by 16 bytes of SHA-256 of its whole value and 8
// random bytes: inserts stay blind (one short transaction, no read), equal
// rows get distinct keys, and the row GMS names in an UPDATE or DELETE —
// which carries no key — is found by scanning its hash prefix, usually from
// the scan that produced it (the transaction's cache).

const keylessHashLen = 16

func (ti *tableInfo) keylessHash(row sql.Row) ([]byte, error) {
	v, err := ti.encodeValue(row)
	if err != nil {
		return nil, err
	}
	h := sha256.Sum256(v)
	return h[:keylessHashLen], nil
}

// keylessKey finds the key of one stored row equal to row (and not in
// skip).
func (ti *tableInfo) keylessKey(ctx *sql.Context, tx *session.Txn, row sql.Row) ([]byte, error) {
	h, err := ti.keylessHash(row)
	if err != nil {
		return nil, err
	}
	prefix := ti.rowKey(h)
	sc := tx.Scan(prefix, rowenc.PrefixEnd(prefix))
	want, err := ti.encodeValue(row)
	if err != nil {
		return nil, err
	}
	for {
		kv, ok, err := sc.Next(ctx)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("backend: table %s: the row to change is gone: %w", ti.desc.Name, sql.ErrDeleteRowNotFound.New())
		}
		if bytes.Equal(kv.Value, want) {
			return kv.Key, nil
		}
	}
}

// existingKey returns the primary key of a stored row GMS hands back for an
// update or delete.
func (ti *tableInfo) existingKey(ctx *sql.Context, tx *session.Txn, row sql.Row) ([]byte, error) {
	if ti.keyless {
		return ti.keylessKey(ctx, tx, row)
	}
	s, err := ti.pkSuffix(row)
	if err != nil {
		return nil, err
	}
	return ti.rowKey(s), nil
}

// suffixOf returns the pk suffix of a row key.
func (ti *tableInfo) suffixOf(key []byte) []byte {
	return key[len(rowenc.IndexPrefix(ti.desc.ID, rowenc.PrimaryIndexID)):]
}
