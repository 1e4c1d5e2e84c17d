package bench

import (
	"bytes"
	"fmt"

	"github.com/augustus-db/augustus/pkg/bft/replica"
)

// The log workload: each caller appends --size bytes per call to a log of
// its own (replicas started with --app log), and checks each result is a
// log length.
func init() {
	register(&Spec{
		Names: []string{"log"}, Order: 20, Family: FamilyGroup,
		Help: `"log" appends --size bytes per call to one log per caller (replicas with --app
log) and checks that each result is the log's length.
`,
		Example: `  augustus bench --workload log --dir ./c --clients 16 --duration 10s --size 100 --json result.json`,
		newGroup: func(env *groupEnv, _ string) (Workload, error) {
			o := env.o
			value := bytes.Repeat([]byte{'x'}, o.size)
			return &groupWorkload{env: env, app: "log",
				payload: func(i int) []byte { return replica.LogAppend(fmt.Sprintf("bench-%d", i), value) },
				check: func(result []byte) error {
					if _, err := replica.DecodeLogLength(result); err != nil {
						// The group answered, with f+1 matching results,
						// something the log application never returns:
						// another application.
						return fmt.Errorf("%w: the result is not a log length: %w: the log workload needs replicas running --app log (augustus start --dir %s --app log)",
							errWrongResult, err, o.dir)
					}
					return nil
				}}, nil
		},
	})
}
