package cli

import (
	"fmt"

	"github.com/dustin/go-humanize"

	"github.com/augustus-db/augustus/pkg/storage"
)

// byteSize is a flag value of bytes written with an optional unit, as
// operators write sizes: "64MiB", "16 MiB", "1GB", or plain bytes
// ("67108864"). IEC units (KiB, MiB, GiB) are powers of 1024, SI units (kB,
// MB, GB) powers of 1000 (go-humanize's ParseBytes). It prints in IEC units.
type byteSize struct {
	v        uint64
	min, max uint64 // the accepted range, checked by Set
	// zero accepts 0 beside the range ("off").
	zero bool
	// given is set once Set accepted a value.
	given bool
}

func (b *byteSize) String() string { return humanize.IBytes(b.v) }

func (b *byteSize) Type() string { return "size" }

func (b *byteSize) Set(s string) error {
	v, err := humanize.ParseBytes(s)
	if err != nil {
		return fmt.Errorf("want a size such as 64MiB or 67108864: %w", err)
	}
	if (v < b.min || v > b.max) && !(v == 0 && b.zero) {
		want := humanize.IBytes(b.min) + " to " + humanize.IBytes(b.max)
		if b.zero {
			want = "0 (off) or " + want
		}
		return fmt.Errorf("%s is out of range: want %s", humanize.IBytes(v), want)
	}
	b.v, b.given = v, true
	return nil
}

// The bounds of the store's sizes (augustus replica and start): pebble
// takes a memtable below 4 GiB, and a store of less than 1 MiB of either is
// a mistake, not a tuning. The row cache (fastcache) takes at least 32 MiB.
const (
	minStoreSize    = 1 << 20
	minRowCacheSize = storage.MinRowCacheSize
	maxMemTableSize = 1 << 30
	maxCacheSize    = 1 << 40
)
