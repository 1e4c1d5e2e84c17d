package bench

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/augustus-db/augustus/pkg/txn"
	"github.com/augustus-db/augustus/pkg/txn/coord"
	"github.com/augustus-db/augustus/pkg/txn/txntest/elle"
	"github.com/augustus-db/augustus/pkg/txn/txntest/history"
)

// BankReport is the bank's end-of-run checks.
type BankReport struct {
	Accounts int `json:"accounts"`
	// Total is the sum of the balances read in one transaction at the end;
	// Expected is accounts × the initial balance.
	Total    int  `json:"total"`
	Expected int  `json:"expected"`
	TotalOK  bool `json:"total_ok"`
	// History is the file written (--history); Processes the process ids
	// this run used in it.
	History     string `json:"history,omitempty"`
	Processes   string `json:"processes,omitempty"`
	HistoryOps  int    `json:"history_ops,omitempty"`
	Checked     bool   `json:"checked"`
	CheckedTxns int    `json:"checked_txns,omitempty"`
	// Anomalies are the Elle checker's findings (txn.md X1), one line each.
	Anomalies []string `json:"anomalies,omitempty"`
	Problems  []string `json:"problems,omitempty"`
}

// finish reads the total, writes the history and checks it, into
// rep.Bank, and prints the checks.
func (s *bank) finish(ctx context.Context, r *TxnReport) error {
	rep, err := s.checks(ctx)
	r.Bank = rep
	if err != nil {
		return err
	}
	printBankReport(s.env.stdout, rep)
	return nil
}

// checks reads the total, writes the history and checks it.
func (s *bank) checks(ctx context.Context) (*BankReport, error) {
	b := s.env
	rep := &BankReport{Accounts: s.ks.items, Expected: s.ks.items * BankInitial}
	total, err := s.readTotal(ctx)
	if err != nil {
		rep.Problems = append(rep.Problems, fmt.Sprintf("the final total could not be read: %v", err))
	} else {
		rep.Total = total
		rep.TotalOK = total == rep.Expected
		if !rep.TotalOK {
			rep.Problems = append(rep.Problems, fmt.Sprintf("the bank's total is %d, want %d: money was created or lost", total, rep.Expected))
		}
	}
	if s.rec == nil {
		return rep, nil
	}
	h := s.rec.History()
	rep.HistoryOps = len(h)
	rep.Processes = fmt.Sprintf("p%d..p%d", s.base, s.maxProc)
	if s.f.history != "" {
		comment := fmt.Sprintf("augustus bench --workload bank: %d accounts, %d groups, processes %s, %s\nmerge with other processes' files: augustus bench --dir DIR --check-history a.txt --check-history b.txt",
			s.ks.items, len(b.c.Groups), rep.Processes, time.Now().UTC().Format(time.RFC3339))
		if err := history.WriteFile(s.f.history, h, comment); err != nil {
			return rep, fmt.Errorf("--history: %w", err)
		}
		rep.History = s.f.history
		fmt.Fprintf(b.stderr, "bench: wrote the history (%d ops, processes %s) to %s\n", len(h), rep.Processes, s.f.history)
	}
	if s.f.check {
		res, err := checkHistory(h)
		if err != nil {
			rep.Problems = append(rep.Problems, err.Error())
			return rep, nil
		}
		rep.Checked, rep.CheckedTxns = true, res.Txns
		for _, a := range res.Anomalies {
			rep.Anomalies = append(rep.Anomalies, a.Summary)
		}
		if !res.Valid() {
			rep.Problems = append(rep.Problems, fmt.Sprintf("the history has %d anomalies (txn.md X1): %s", len(res.Anomalies), res.String()))
		}
	}
	return rep, nil
}

// readTotal reads every account in one transaction (multi-group read-only
// when the accounts span groups: one consistent cut) and sums them.
func (s *bank) readTotal(ctx context.Context) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, s.env.o.callTimeout)
	defer cancel()
	ops := make(coord.Ops, s.ks.items)
	mops := make([]history.MicroOp, s.ks.items)
	for i := range ops {
		k := s.ks.key(i)
		ops[i] = txn.Op{Kind: txn.OpRead, Key: k}
		mops[i] = history.Read(string(k))
	}
	h := s.invoke(s.maxProc, mops...)
	res, err := s.env.do(ctx, ops, coord.Options{})
	if err != nil {
		s.complete(h, outcomeOf(err), nil)
		return 0, err
	}
	total := 0
	for i, r := range res.Ops {
		if !r.Present {
			s.complete(h, history.Info, nil)
			return 0, errBankNotLoaded
		}
		bal, tag, err := decodeBankValue(r.Value)
		if err != nil {
			s.complete(h, history.Info, nil)
			return 0, err
		}
		total += bal
		mops[i] = history.ReadValue(mops[i].Key, tag)
	}
	s.complete(h, history.OK, mops)
	return total, nil
}

// checkHistory runs the Elle checker (strict serializability, txn.md X1).
func checkHistory(h history.History) (*elle.Result, error) {
	res, err := elle.Check(h, elle.Options{})
	if err != nil {
		return nil, fmt.Errorf("the history cannot be checked: %w", err)
	}
	return res, nil
}

// mergeHistories concatenates histories of several processes in
// invocation order (their clocks are the same machine's wall clock, or
// synchronized ones).
func mergeHistories(hs ...history.History) history.History {
	var out history.History
	for _, h := range hs {
		out = append(out, h...)
	}
	slices.SortStableFunc(out, func(a, b history.Op) int {
		switch {
		case a.Invoke < b.Invoke:
			return -1
		case a.Invoke > b.Invoke:
			return 1
		}
		return 0
	})
	return out
}

// runCheckHistory merges and checks history files (--check-history).
func runCheckHistory(stdout io.Writer, files []string) error {
	var hs []history.History
	for _, f := range files {
		h, err := history.ReadFile(f)
		if err != nil {
			return fmt.Errorf("--check-history: %w", err)
		}
		hs = append(hs, h)
	}
	h := mergeHistories(hs...)
	res, err := checkHistory(h)
	if err != nil {
		return fmt.Errorf("--check-history: %w", err)
	}
	fmt.Fprintf(stdout, "checked %d ops from %d file(s): %d transactions in the dependency graph, %d edges\n", len(h), len(hs), res.Txns, res.Edges)
	if res.Valid() {
		fmt.Fprintln(stdout, "no anomaly (strict serializability, txn.md X1)")
		return nil
	}
	fmt.Fprintln(stdout, res.Explain())
	return fmt.Errorf("the history has %d anomalies: %s", len(res.Anomalies), strings.ReplaceAll(res.String(), "\n", "; "))
}

// printBankReport writes the bank's checks.
func printBankReport(w io.Writer, r *BankReport) {
	fmt.Fprintf(w, "bank: %d accounts, total %d (want %d): %s\n", r.Accounts, r.Total, r.Expected, OKText(r.TotalOK))
	if r.History != "" {
		fmt.Fprintf(w, "bank: history of %d ops (processes %s) in %s\n", r.HistoryOps, r.Processes, r.History)
	}
	if r.Checked {
		verdict := "no anomaly"
		if len(r.Anomalies) > 0 {
			verdict = fmt.Sprintf("%d anomalies: %s", len(r.Anomalies), strings.Join(r.Anomalies, "; "))
		}
		fmt.Fprintf(w, "bank: Elle check (strict serializability) of %d transactions: %s\n", r.CheckedTxns, verdict)
	}
}

// OKText is "ok" or "WRONG".
func OKText(ok bool) string {
	if ok {
		return "ok"
	}
	return "WRONG"
}
