package gateway

import (
	"errors"
	"testing"
	"time"

	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/vt/sqlparser"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/sql/session"
)

// Names follow augustus_<subsystem>_<name>_<unit>: counters end in _total,
// the latency histogram in _seconds.
func TestMetricNamesConform(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	m.watchEngine(&session.Stats{})
	m.Observe(KindSelect, PathEngine, time.Millisecond, errors.New("x"))
	m.refused.WithLabelValues("auth").Inc()
	fams, err := reg.Gather()
	require.NoError(t, err)
	require.NotEmpty(t, fams)
	for _, f := range fams {
		require.Regexp(t, `^augustus_sql_[a-z][a-z_]*[a-z]$`, f.GetName())
		switch f.GetType() {
		case dto.MetricType_COUNTER:
			require.Regexp(t, `_total$`, f.GetName())
		case dto.MetricType_HISTOGRAM:
			require.Regexp(t, `_seconds$`, f.GetName())
		default:
			require.NotRegexp(t, `_total$`, f.GetName())
		}
	}
}

func TestKindOfClassifiesStatements(t *testing.T) {
	for q, want := range map[string]Kind{
		"SELECT 1":                           KindSelect,
		"SELECT 1 UNION SELECT 2":            KindSelect,
		"INSERT INTO t VALUES (1)":           KindInsert,
		"REPLACE INTO t VALUES (1)":          KindReplace,
		"UPDATE t SET a = 1":                 KindUpdate,
		"DELETE FROM t WHERE a = 1":          KindDelete,
		"CREATE TABLE t (a INT PRIMARY KEY)": KindDDL,
		"ALTER TABLE t ADD COLUMN b INT":     KindDDL,
		"CREATE DATABASE d":                  KindDDL,
		"BEGIN":                              KindTxn,
		"COMMIT":                             KindTxn,
		"SAVEPOINT s":                        KindTxn,
		"SET autocommit = 0":                 KindSet,
		"SHOW TABLES":                        KindShow,
		"EXPLAIN PLAN SELECT 1":              KindShow,
		"USE d":                              KindUse,
		"CALL p()":                           KindOther,
	} {
		s, err := sqlparser.Parse(q)
		require.NoError(t, err, q)
		require.Equal(t, want, KindOf(s), q)
	}
	require.Equal(t, KindUnparsed, KindOf(nil))
}

func TestErrorCodeLabelsAreMySQLNumbers(t *testing.T) {
	require.Equal(t, "1213", ErrorCode(session.Serialization("x")))
	require.Equal(t, "1062", ErrorCode(mysql.NewSQLError(1062, "23000", "dup")))
	require.Equal(t, "1105", ErrorCode(errors.New("something else")), "GMS's unknown error")
}
