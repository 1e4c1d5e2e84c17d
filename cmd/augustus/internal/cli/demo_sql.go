package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/augustus-db/augustus/pkg/sql/engine"
)

// demoDatabase is the example database the demo loads on its first start.
const demoDatabase = "demo"

// demoSchema returns the example database's statements for a cluster of
// groups groups: customers in the first group, products in the last, orders
// split by id over both (PARTITION BY RANGE), with secondary indexes, so a
// join or a transaction over them spans groups.
func demoSchema(groups int) []string {
	last := groups - 1
	ordersPlacement := ""
	if groups > 1 {
		ordersPlacement = fmt.Sprintf(" COMMENT 'augustus:placement=range(p0<100@0,p1<MAXVALUE@%d)'", last)
	}
	return []string{
		"CREATE DATABASE " + demoDatabase,
		"USE " + demoDatabase,
		`CREATE TABLE customers (
  id INT PRIMARY KEY,
  name VARCHAR(60) NOT NULL,
  city VARCHAR(40) NOT NULL,
  KEY by_city (city)
) COMMENT 'augustus:placement=group(0)'`,
		fmt.Sprintf(`CREATE TABLE products (
  sku VARCHAR(20) PRIMARY KEY,
  title VARCHAR(80) NOT NULL,
  price DECIMAL(10,2) NOT NULL,
  stock INT NOT NULL
) COMMENT 'augustus:placement=group(%d)'`, last),
		`CREATE TABLE orders (
  id INT PRIMARY KEY AUTO_INCREMENT,
  customer_id INT NOT NULL,
  sku VARCHAR(20) NOT NULL,
  qty INT NOT NULL,
  KEY by_customer (customer_id)
)` + ordersPlacement,
		`INSERT INTO customers VALUES
  (1, 'Ada Lovelace', 'London'), (2, 'Alan Turing', 'Manchester'),
  (3, 'Grace Hopper', 'New York'), (4, 'Barbara Liskov', 'Boston'),
  (5, 'Leslie Lamport', 'Palo Alto'), (6, 'Nancy Lynch', 'Boston')`,
		`INSERT INTO products VALUES
  ('KB-01', 'Mechanical keyboard', 89.00, 40), ('MS-02', 'Trackball', 45.50, 25),
  ('MN-27', '27-inch monitor', 249.99, 12), ('CB-10', 'USB-C cable', 9.90, 300),
  ('HD-05', 'Headphones', 129.00, 18)`,
		`INSERT INTO orders (id, customer_id, sku, qty) VALUES
  (1, 1, 'KB-01', 1), (2, 1, 'CB-10', 3), (3, 2, 'MN-27', 2), (4, 3, 'MS-02', 1),
  (5, 4, 'HD-05', 1), (6, 6, 'CB-10', 5),
  (101, 5, 'KB-01', 2), (102, 3, 'MN-27', 1), (103, 2, 'HD-05', 1), (104, 6, 'MS-02', 2)`,
	}
}

// demoState is what the demo did about its example database.
type demoState int

const (
	demoAbsent demoState = iota // not there, and no admin key to create it
	demoFound                   // there from an earlier start
	demoLoaded                  // created now
)

// loadDemoDatabase creates the example database unless it exists (canDDL:
// the engine has an admin key).
func loadDemoDatabase(ctx context.Context, eng *engine.Engine, groups int, canDDL bool) (demoState, error) {
	sctx := eng.NewContext(ctx, eng.NewSession(sql.Client{User: "root", Address: "localhost"}, "", 0))
	_, rows, err := eng.Query(sctx, "SHOW DATABASES LIKE '"+demoDatabase+"'")
	if err != nil {
		return demoAbsent, fmt.Errorf("demo: look for the example database: %w", err)
	}
	if len(rows) > 0 {
		return demoFound, nil
	}
	if !canDDL {
		return demoAbsent, nil
	}
	for _, q := range demoSchema(groups) {
		if _, _, err := eng.Query(sctx, q); err != nil {
			return demoAbsent, fmt.Errorf("demo: load the example database (%s): %w; drop what was created (DROP DATABASE %s) and start the demo again to load it anew",
				strings.SplitN(q, "\n", 2)[0], err, demoDatabase)
		}
	}
	return demoLoaded, nil
}

// demoSQLBanner says how to reach the demo's SQL and what the example holds.
func demoSQLBanner(hint string, groups int, state demoState) string {
	var b strings.Builder
	fmt.Fprintf(&b, "SQL: %s\n", hint)
	if state == demoAbsent {
		b.WriteString("  (this cluster has no admin key, so the gateway refuses schema changes and the example database was not loaded)\n")
		return b.String()
	}
	what := "has"
	if state == demoLoaded {
		what = "was loaded with"
	}
	if groups > 1 {
		fmt.Fprintf(&b, "  database %s %s customers (group 0), products (group %d) and orders (split by id over groups 0 and %d)\n",
			demoDatabase, what, groups-1, groups-1)
	} else {
		fmt.Fprintf(&b, "  database %s %s customers, products and orders\n", demoDatabase, what)
	}
	b.WriteString("  try: SELECT c.name, p.title, o.qty FROM demo.orders o JOIN demo.customers c ON c.id = o.customer_id\n" +
		"         JOIN demo.products p ON p.sku = o.sku WHERE c.city = 'Boston';\n")
	return b.String()
}
