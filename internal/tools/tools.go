//go:build tools

// Package tools pins the modules the layers of Augustus build on, so that
// go.mod stays stable while the packages that use them are written.
package tools

import (
	_ "filippo.io/edwards25519"
	_ "github.com/cockroachdb/datadriven"
	_ "github.com/cockroachdb/pebble/v2"
	_ "github.com/creack/pty"
	_ "github.com/dolthub/go-mysql-server"
	_ "github.com/dolthub/go-mysql-server/enginetest"
	_ "github.com/go-sql-driver/mysql"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/stretchr/testify/require"
	_ "go.uber.org/goleak"
	_ "golang.org/x/crypto/hkdf"
	_ "google.golang.org/grpc"
	_ "google.golang.org/protobuf/proto"
	_ "pgregory.net/rapid"
)
