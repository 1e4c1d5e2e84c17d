package bfttest

import (
	"bytes"
	"fmt"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/bftpb"
)

// The checkers. They see every execution of every correct replica and every
// result a client accepts.

func (s *Sim) violation(format string, args ...any) {
	msg := fmt.Sprintf("t=%dms: ", s.now/1000) + fmt.Sprintf(format, args...)
	s.tracef("VIOLATION %s", msg)
	if len(s.violations) < 20 {
		s.violations = append(s.violations, msg)
	}
}

// checkExecution: agreement (one digest per seq across correct replicas,
// one state digest per checkpoint), validity (only issued requests, at most
// once per replica), and records the results correct replicas computed.
func (s *Sim) checkExecution(r *replica, ex *bft.Execution, results [][]byte, digest []byte) {
	if d, ok := s.agreed[ex.Seq]; ok && d != ex.Digest {
		s.violation("agreement: replica %d executed %s at seq %d, another correct replica %s", r.id, ex.Digest, ex.Seq, d)
	} else if !ok {
		s.agreed[ex.Seq] = ex.Digest
	}
	if digest != nil {
		if d, ok := s.cpDigests[ex.Seq]; ok && !bytes.Equal(d, digest) {
			s.violation("agreement: replica %d has state digest %x at checkpoint %d, another correct replica %x", r.id, digest[:4], ex.Seq, d[:4])
		} else if !ok {
			s.cpDigests[ex.Seq] = digest
		}
	}
	for i, req := range ex.Execute {
		key := reqKey{bft.ClientID(req.Client), req.Timestamp}
		if !s.wasIssued(key, req.Payload) {
			s.violation("validity: replica %d executed a request its client did not issue (%v ts %d)", r.id, key.client, key.ts)
		}
		if r.executed[key] {
			s.violation("validity: replica %d executed %v ts %d twice", r.id, key.client, key.ts)
		}
		r.executed[key] = true
		if prev, ok := s.results[key]; ok && !bytes.Equal(prev, results[i]) {
			s.violation("agreement: replica %d computed a different result for %v ts %d", r.id, key.client, key.ts)
		} else if !ok {
			s.results[key] = results[i]
		}
	}
}

// checkAccepted: client safety — an accepted result is what correct
// replicas computed; a correct client's request never turns stale.
func (s *Sim) checkAccepted(c *client, rep *bftpb.Reply, latency int64) {
	key := reqKey{c.id, rep.Timestamp}
	if rep.Status != bftpb.ReplyStatus_REPLY_STATUS_OK {
		s.violation("liveness: client %d request ts %d answered %v by f+1 replicas", c.idx, rep.Timestamp, rep.Status)
		return
	}
	want, ok := s.results[key]
	if !ok {
		s.violation("client safety: client %d accepted a result for ts %d that no correct replica computed", c.idx, rep.Timestamp)
		return
	}
	if !bytes.Equal(want, rep.Result) {
		s.violation("client safety: client %d accepted %x for ts %d, correct replicas computed %x", c.idx, rep.Result, rep.Timestamp, want)
	}
	s.stats.accepted++
	s.latencies = append(s.latencies, latency)
}

// issue records a request a client signed (a Byzantine client may sign
// several payloads under one timestamp).
func (s *Sim) issue(key reqKey, payload []byte) {
	s.issued[key] = append(s.issued[key], payload)
}

func (s *Sim) wasIssued(key reqKey, payload []byte) bool {
	for _, p := range s.issued[key] {
		if bytes.Equal(p, payload) {
			return true
		}
	}
	return false
}
