package cluster

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Sentinel errors. Every problem Validate finds wraps ErrInvalid and one of
// the more specific sentinels, so callers test with errors.Is.
var (
	// ErrInvalid: the cluster file is malformed or inconsistent.
	ErrInvalid = errors.New("cluster: invalid cluster")
	// ErrBadParameter: a scalar parameter (cluster id, f, K, L, W) is out
	// of range.
	ErrBadParameter = errors.New("cluster: bad parameter")
	// ErrGroupSize: a group does not have exactly 3f+1 replicas, or its
	// replica indexes are not 0..n-1.
	ErrGroupSize = errors.New("cluster: wrong group size")
	// ErrBadName: a replica or client name is empty or not a safe file name.
	ErrBadName = errors.New("cluster: bad name")
	// ErrDuplicate: two groups, replicas or clients share an id, name,
	// address or public key.
	ErrDuplicate = errors.New("cluster: duplicate")
	// ErrBadAddress: an address is not host:port with a numeric port.
	ErrBadAddress = errors.New("cluster: malformed address")
	// ErrBadKey: a public key is malformed (it also wraps
	// auth.ErrMalformedKey).
	ErrBadKey = errors.New("cluster: malformed public key")
	// ErrBadPartitions: the partition map overlaps, leaves a gap, has a
	// malformed bound or names an unknown group.
	ErrBadPartitions = errors.New("cluster: bad partition map")
	// ErrUnknownPolicy: the client policy is neither "listed" nor "open".
	ErrUnknownPolicy = errors.New("cluster: unknown client policy")
	// ErrNotFound: no replica, client or group has that name or id.
	ErrNotFound = errors.New("cluster: not found")
	// ErrKeyMismatch: a private key file does not hold the key pair whose
	// public key the cluster file lists.
	ErrKeyMismatch = errors.New("cluster: key mismatch")
)

// ValidationError lists every problem Validate found. errors.Is matches
// ErrInvalid and the sentinel of each problem.
type ValidationError struct {
	// File is the cluster file the problems were found in ("" if the
	// cluster did not come from a file); the message names it once.
	File     string
	Problems []error
}

func (e *ValidationError) Error() string {
	prefix := ErrInvalid.Error() + ": "
	if e.File != "" {
		prefix += e.File + ": "
	}
	if len(e.Problems) == 1 {
		return prefix + e.Problems[0].Error()
	}
	var b strings.Builder
	b.WriteString(prefix)
	b.WriteString(strconv.Itoa(len(e.Problems)))
	b.WriteString(" problems:")
	for _, p := range e.Problems {
		b.WriteString("\n  - ")
		b.WriteString(p.Error())
	}
	return b.String()
}

// Unwrap returns ErrInvalid and the problems.
func (e *ValidationError) Unwrap() []error {
	return append([]error{ErrInvalid}, e.Problems...)
}

// problem is one finding of Validate: its message reads on its own and it
// wraps the sentinel of its kind.
type problem struct {
	kinds []error
	msg   string
}

func (p *problem) Error() string   { return p.msg }
func (p *problem) Unwrap() []error { return p.kinds }

func newProblem(kind error, format string, args ...any) error {
	return &problem{kinds: []error{kind}, msg: fmt.Sprintf(format, args...)}
}
