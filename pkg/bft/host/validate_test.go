package host

import (
	"errors"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/bftpb"
	"github.com/augustus-db/augustus/pkg/bft/envelope"
	"github.com/augustus-db/augustus/pkg/storage"
)

// oddApp accepts calls of even length only and answers "ok:<call>".
type oddApp struct{ validated *int }

func (a oddApp) Validate(call []byte) error {
	if a.validated != nil {
		*a.validated++
	}
	if len(call)%2 == 1 {
		return errors.New("odd call")
	}
	return nil
}
func (oddApp) Execute(_ bft.SeqNum, calls []Call, _ *storage.Batch) ([][]byte, error) {
	out := make([][]byte, len(calls))
	for i, c := range calls {
		out[i] = append([]byte("ok:"), c.Payload...)
	}
	return out, nil
}
func (oddApp) Restored(Reader) error { return nil }

// DESIGN.md §3.2: a call the application's Validate rejects fails alone —
// it gets its reason as its result — while the other calls of its envelope
// (other callers' calls: envelopes are shared) execute; the verdict comes
// from the cache the checker filled, not from validating again.
func TestInvalidCallFailsAloneInItsEnvelope(t *testing.T) {
	e, err := storage.Open("db", storage.Options{FS: vfs.NewMem()})
	require.NoError(t, err)
	defer e.Close()
	validated := 0
	app := oddApp{validated: &validated}
	cache := NewValidationCache(0)
	cfg := bft.DefaultConfig(0, 1)
	cfg.ClusterID, cfg.Signer = "test", testSigner(t, 0)
	l, err := New(Config{Core: cfg, Engine: e, App: app, Net: &recNet{}, Exec: &recExec{}, Validation: cache})
	require.NoError(t, err)

	payload := envelope.EncodeCalls([][]byte{[]byte("ab"), []byte("abc"), []byte("abcd")})
	require.NoError(t, ValidateEnvelope(app, cache, payload), "an envelope with an invalid call is still a valid request")
	require.Equal(t, 3, validated)
	req := &bftpb.Request{Client: make([]byte, 32), Timestamp: 1, Payload: payload}
	res := l.RunExecutions(&Job{Executions: []bft.Execution{{Seq: 1, Batch: &bftpb.Batch{Requests: []*bftpb.Request{req}}, Execute: []*bftpb.Request{req}}}})
	require.NoError(t, res.Err)
	require.Equal(t, 3, validated, "execution validated again instead of using the checker's verdicts")
	vals, rejected, err := envelope.DecodeOutcomes(res.Results[0][0])
	require.NoError(t, err)
	require.Equal(t, []string{"", "odd call", ""}, rejected)
	require.Equal(t, "ok:ab", string(vals[0]))
	require.Equal(t, "ok:abcd", string(vals[2]))

	// Without a cached verdict (evicted, or a batch learned by catch-up) the
	// call is validated again, with the same result.
	l.validation = NewValidationCache(0)
	res = l.RunExecutions(&Job{Executions: []bft.Execution{{Seq: 2, Batch: &bftpb.Batch{Requests: []*bftpb.Request{req}}, Execute: []*bftpb.Request{req}}}})
	require.NoError(t, res.Err)
	_, rejected2, err := envelope.DecodeOutcomes(res.Results[0][0])
	require.NoError(t, err)
	require.Equal(t, rejected, rejected2)
}

// batchApp is an oddApp that also validates calls together, counting how
// often each way is used.
type batchApp struct {
	oddApp
	batches, batched int
}

func (a *batchApp) ValidateCalls(calls [][]byte) []error {
	a.batches++
	a.batched += len(calls)
	out := make([]error, len(calls))
	for i, c := range calls {
		out[i] = a.oddApp.Validate(c)
	}
	return out
}

// An application that validates calls together (CallsValidator) gets the
// calls of an envelope the cache does not hold in one ValidateCalls, and
// the verdicts it gives are the ones execution later reads from the cache.
func TestEnvelopeCallsAreValidatedTogetherWhenTheAppCan(t *testing.T) {
	singles := 0
	app := &batchApp{oddApp: oddApp{validated: &singles}}
	cache := NewValidationCache(0)
	require.NoError(t, ValidateEnvelope(app, cache, envelope.EncodeCalls([][]byte{[]byte("ab"), []byte("abc")})))
	require.Equal(t, 1, app.batches)
	require.Equal(t, 2, app.batched)
	// A second envelope with one call already known: only the new ones.
	require.NoError(t, ValidateEnvelope(app, cache, envelope.EncodeCalls([][]byte{[]byte("ab"), []byte("xyz"), []byte("wxyz")})))
	require.Equal(t, 2, app.batches)
	require.Equal(t, 4, app.batched)
	before := singles
	require.Equal(t, "", cache.Verdict(app, []byte("ab")))
	require.Equal(t, "odd call", cache.Verdict(app, []byte("abc")))
	require.Equal(t, "odd call", cache.Verdict(app, []byte("xyz")))
	require.Equal(t, "", cache.Verdict(app, []byte("wxyz")))
	require.Equal(t, before, singles, "the verdicts came from the cache")
}
