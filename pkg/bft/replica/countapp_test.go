package replica

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/storage"
)

// countApp counts how often each call payload executed, in UserData, and
// returns the new count: a call that executed twice shows it.
type countApp struct{}

func (countApp) Validate(call []byte) error {
	if len(call) == 0 {
		return errors.New("empty call")
	}
	return nil
}

func (countApp) Execute(_ bft.SeqNum, calls []Call, w *storage.Batch) ([][]byte, error) {
	out := make([][]byte, len(calls))
	for i, c := range calls {
		var n uint64
		v, err := w.Get(storage.UserData, c.Payload)
		switch {
		case errors.Is(err, storage.ErrNotFound):
		case err != nil:
			return nil, fmt.Errorf("count app: %w", err)
		default:
			n = binary.BigEndian.Uint64(v)
		}
		n++
		out[i] = binary.BigEndian.AppendUint64(nil, n)
		if err := w.Set(storage.UserData, c.Payload, out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (countApp) Restored(Reader) error { return nil }
