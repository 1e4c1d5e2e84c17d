package replica

import (
	"testing"
	"time"
)

func TestGroupOrdersRequestsEndToEnd(t *testing.T) {
	g := newTestGroup(t, 1, nil)
	c := g.client(0)
	invokeAll(t, c, 200, 8, 30*time.Second)
	for i, rr := range g.running {
		if ex := rr.r.node.LastExecuted(); ex == 0 {
			t.Errorf("replica %d executed nothing", i)
		}
	}
}
