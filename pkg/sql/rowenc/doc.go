// Package rowenc encodes SQL rows and index entries as the keys and values
// of Augustus's user-data keyspace (DESIGN.md §6).
//
// # Key layout
//
// Every SQL key starts with Prefix (0xF5, a byte no UTF-8 text starts with,
// so keys written as text through the raw transaction API never collide
// with SQL's), then the table id and the index id, each an ascending uvarint
// (AppendUvarintAscending), then the index's key columns in the key encoding
// of key.go:
//
//	primary index (id 1)        0xF5 table 1 pk-columns             → value of the other columns
//	unique secondary index      0xF5 table i index-columns          → pk-columns (the encoded primary key)
//	  (a NULL among the columns: MySQL allows many, so the pk is appended to the key, as below)
//	non-unique secondary index  0xF5 table i index-columns pk-columns → empty
//	table bookkeeping (id 0)    0xF5 table 0 "autoinc"              → the AUTO_INCREMENT counter
//
// A table's keys therefore form one span, TableSpan(id), which the catalog
// assigns to groups (one group, ranges of the primary key, or a hash over
// several groups). Index ids and table ids are never reused: TRUNCATE gives
// the table a new id, so the old span can be cleared in the background while
// the new one is used.
//
// # Key encoding
//
// The key encoding of each column type preserves the type's order under
// bytes.Compare, puts NULL first (MySQL's ascending order), and is
// prefix-free, so composite keys sort column by column. Strings under
// collations that do not compare byte by byte (utf8mb4_0900_ai_ci and the
// other case- or accent-insensitive ones) are encoded as sort keys built
// from GMS's collation weights: equal under the collation means equal keys,
// but the original string cannot be recovered from the key, so a primary key
// column of such a type is also kept in the row's value. Property tests
// (rapid) check order against GMS's Type.Compare and round trips.
//
// # Value encoding
//
// A row's value holds its non-key columns (and any key column whose key
// encoding is not reversible) keyed by column id (value.go), so ADD COLUMN
// and DROP COLUMN need no rewrite: a missing id reads as the column's
// recorded default, an unknown id is skipped.
//
// Imports: go-mysql-server's sql and types packages (the types it encodes)
// and shopspring/decimal. Nothing of this module: no transactions, no
// network.
package rowenc
