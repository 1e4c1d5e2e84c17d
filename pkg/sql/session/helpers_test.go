package session

import (
	"github.com/augustus-db/augustus/pkg/txn"
	"github.com/augustus-db/augustus/pkg/txn/coord"
)

func txnOps(ops ...txn.Op) coord.Ops { return coord.Ops(ops) }

func coordOptions() coord.Options { return coord.Options{} }
