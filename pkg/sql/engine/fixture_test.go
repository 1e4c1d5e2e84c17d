package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/sql/session"
	"github.com/augustus-db/augustus/pkg/txn"
	"github.com/augustus-db/augustus/pkg/txn/coord"
	"github.com/augustus-db/augustus/pkg/txn/coord/coordtest"
)

// frontEnd is one SQL front-end: its own client (own key, own nonce
// sequence) and engine over a shared cluster.
type frontEnd struct {
	client *coord.Client
	eng    *Engine
	obs    *counter
}

// counter counts the transactions a client sends as owner (coord's
// Observer.Sent: every attempt, retries included) and their operations.
type counter struct {
	mu   sync.Mutex
	txns []*txn.Txn
}

func (c *counter) Sent(_ txn.TxnID, t *txn.Txn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.txns = append(c.txns, t)
}
func (c *counter) Decided(txn.TxnID, txn.Decision, bool) {}
func (c *counter) Finished(txn.TxnID, uint64)            {}

// since returns the transactions sent after the first n.
func (c *counter) since(n int) []*txn.Txn {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*txn.Txn(nil), c.txns[n:]...)
}

func (c *counter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.txns)
}

type cluster struct {
	t   testing.TB
	cl  *coordtest.Cluster
	fes []*frontEnd
}

func startCluster(t testing.TB, groups int) *cluster {
	return &cluster{t: t, cl: coordtest.Start(t, coordtest.Options{Groups: groups})}
}

// frontEnd returns front-end i (client key i, the cluster's admin key
// unless noAdmin), starting it on first use.
func (c *cluster) frontEnd(i int, noAdmin bool) *frontEnd {
	return c.frontEndWith(i, noAdmin, nil)
}

// frontEndWith is frontEnd with the engine's configuration adjusted.
func (c *cluster) frontEndWith(i int, noAdmin bool, adjust func(*Config)) *frontEnd {
	for len(c.fes) <= i {
		c.fes = append(c.fes, nil)
	}
	if c.fes[i] != nil {
		return c.fes[i]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	obs := &counter{}
	cfg := coord.ClientConfig{Cluster: c.cl.Cluster, Key: c.cl.ClientKey(i), GroupTimeout: 300 * time.Millisecond, Observer: obs}
	if !noAdmin {
		cfg.Admin = c.cl.AdminKey(0)
	}
	cli, err := coord.NewClient(ctx, cfg)
	require.NoError(c.t, err)
	ecfg := Config{Client: cli}
	if adjust != nil {
		adjust(&ecfg)
	}
	eng, err := New(ctx, ecfg)
	require.NoError(c.t, err)
	c.t.Cleanup(func() {
		_ = eng.Close()
		_ = cli.Close()
	})
	c.fes[i] = &frontEnd{client: cli, eng: eng, obs: obs}
	return c.fes[i]
}

// conn is a session of a front-end with its GMS context.
type conn struct {
	fe  *frontEnd
	ctx *sql.Context
}

func (f *frontEnd) connect() *conn {
	s := f.eng.NewSession(sql.Client{User: "root", Address: "localhost"}, "", 0)
	return &conn{fe: f, ctx: f.eng.NewContext(context.Background(), s)}
}

// exec runs a statement and formats its result as the logic tests print
// it: rows (values separated by spaces, NULL for nil), "ok" with the
// affected rows for statements without rows, or "error <code> (<state>):
// <message>".
func (c *conn) exec(q string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c.ctx = c.ctx.WithContext(ctx)
	sch, iter, _, err := c.fe.eng.Run(c.ctx, q, nil, nil)
	if err != nil {
		return formatErr(err)
	}
	var b strings.Builder
	for {
		row, err := iter.Next(c.ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			_ = iter.Close(c.ctx)
			return formatErr(err)
		}
		if len(row) == 0 {
			continue
		}
		if len(row) == 1 {
			if ok, isOK := row[0].(types.OkResult); isOK {
				fmt.Fprintf(&b, "ok %d\n", ok.RowsAffected)
				continue
			}
		}
		for i, v := range row {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(formatValue(sch, i, v))
		}
		b.WriteByte('\n')
	}
	if err := iter.Close(c.ctx); err != nil {
		return formatErr(err)
	}
	if b.Len() == 0 {
		if len(sch) == 0 {
			return "ok\n"
		}
		return "(no rows)\n"
	}
	return b.String()
}

func formatValue(sch sql.Schema, i int, v any) string {
	if v == nil {
		return "NULL"
	}
	switch x := v.(type) {
	case []byte:
		for _, c := range x {
			if c < 0x20 || c > 0x7e {
				return fmt.Sprintf("x'%x'", x)
			}
		}
		return string(x)
	case sql.JSONWrapper:
		if b, err := types.MarshallJson(x); err == nil {
			return string(b)
		}
	}
	if i < len(sch) {
		if s, err := sch[i].Type.SQL(sql.NewEmptyContext(), nil, v); err == nil {
			return s.ToString()
		}
	}
	return fmt.Sprint(v)
}

func formatErr(err error) string {
	if se := session.AsSQLError(err); se != nil {
		return fmt.Sprintf("error %d (%s): %s\n", se.Num, se.State, se.Message)
	}
	se := sql.CastSQLError(err)
	return fmt.Sprintf("error %d (%s): %s\n", se.Num, se.State, se.Message)
}
