package engine

import (
	"fmt"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/shopspring/decimal"
)

// DefaultMaxResultBytes is Config.MaxResultBytes's default.
const DefaultMaxResultBytes = 64 << 20

// erTooBigSelect is MySQL's ER_TOO_BIG_SELECT, the nearest of its codes to
// "this result is larger than the server will hold".
const erTooBigSelect = 1104

// resultBudget counts the bytes of the rows an autocommit statement holds
// until it commits (Run keeps them so that a serialization failure can be
// retried before the client saw a row), and refuses to grow past the cap.
type resultBudget struct {
	max, used int64
}

// add counts a row; it fails once the rows held pass the cap.
func (b *resultBudget) add(r sql.Row) error {
	if b.max <= 0 {
		return nil
	}
	b.used += rowBytes(r)
	if b.used <= b.max {
		return nil
	}
	return mysql.NewSQLError(erTooBigSelect, "42000",
		"the result of this autocommit statement passed %d MiB, the most a front-end holds before the statement commits "+
			"(it keeps the rows so that a conflict can be retried before the client sees any): read it in pages "+
			"(WHERE id > ? ORDER BY id LIMIT n), or run it between BEGIN and COMMIT, where rows stream and a conflict shows at COMMIT",
		b.max>>20)
}

// rowBytes estimates a row's memory: its strings and byte slices, and a
// word or two per value.
func rowBytes(r sql.Row) int64 {
	n := int64(24 + 16*len(r))
	for _, v := range r {
		switch x := v.(type) {
		case string:
			n += int64(len(x))
		case []byte:
			n += int64(len(x))
		case decimal.Decimal:
			n += 16
		case fmt.Stringer:
			n += 32
		}
	}
	return n
}
