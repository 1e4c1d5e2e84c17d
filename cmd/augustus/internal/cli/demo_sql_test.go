package cli

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDemoSQLBannerSaysWhatTheExampleDatabaseIs(t *testing.T) {
	hint := "mysql -h 127.0.0.1 -P 3306 -u root"
	b := demoSQLBanner(hint, 2, demoLoaded)
	require.True(t, strings.HasPrefix(b, "SQL: "+hint+"\n"))
	require.Contains(t, b, "database demo was loaded with customers (group 0), products (group 1) and orders (split by id over groups 0 and 1)")
	require.Contains(t, demoSQLBanner(hint, 3, demoFound), "database demo has customers (group 0), products (group 2)")
	require.Contains(t, demoSQLBanner(hint, 1, demoFound), "database demo has customers, products and orders")
	absent := demoSQLBanner(hint, 2, demoAbsent)
	require.Contains(t, absent, "no admin key")
	require.NotContains(t, absent, "try:")
}

// The example's placement names only groups a cluster has.
func TestDemoSchemaFitsTheGroups(t *testing.T) {
	one := strings.Join(demoSchema(1), "\n")
	require.NotContains(t, one, "group(1)")
	require.NotContains(t, one, "range(")
	three := strings.Join(demoSchema(3), "\n")
	require.Contains(t, three, "placement=group(2)")
	require.Contains(t, three, "range(p0<100@0,p1<MAXVALUE@2)")
}
