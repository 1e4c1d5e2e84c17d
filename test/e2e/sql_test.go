package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestE2ESQL runs real MySQL clients against an `augustus gateway` process
// on a cluster of 2 groups × 4 replica processes: the mysql CLI and
// mysqldump (Debian's mariadb-client), go-sql-driver/mysql with prepared
// statements and multi-statements, GORM's migrator, sysbench's
// oltp_read_write, and the anomaly checks (concurrent increments, write
// skew, a bank across groups checked by the Elle checker). One cluster
// serves every subtest; the short form (make test) runs shorter loads.
func TestE2ESQL(t *testing.T) {
	sc := newSQLCluster(t)
	t.Run("MysqlCLI", func(t *testing.T) { testMysqlCLI(t, sc) })
	t.Run("MysqldumpNoData", func(t *testing.T) { testMysqldump(t, sc) })
	t.Run("GoDriver", func(t *testing.T) { testGoDriver(t, sc) })
	t.Run("GORMMigrator", func(t *testing.T) { testGORM(t, sc) })
	t.Run("ConcurrentIncrements", func(t *testing.T) { testConcurrentIncrements(t, sc) })
	t.Run("WriteSkew", func(t *testing.T) { testWriteSkew(t, sc) })
	t.Run("BankAcrossGroups", func(t *testing.T) {
		d := 20 * time.Second
		if testing.Short() {
			d = 3 * time.Second
		}
		b := newSQLBank(t, sc, "bank", 10)
		b.run(t, d, 4, nil)
		b.check(t)
	})
	t.Run("Sysbench", func(t *testing.T) { testSysbench(t, sc) })
	t.Run("Metrics", func(t *testing.T) {
		if n := sc.gw.metric("augustus_sql_statements_total", "kind", "select", "path", "engine"); n < 10 {
			t.Fatalf("augustus_sql_statements_total{kind=select} = %v after the subtests", n)
		}
		if n := sc.gw.metric("augustus_sql_panics_total"); n != 0 {
			t.Fatalf("%v statements panicked", n)
		}
		t.Logf("gateway: %v statements retried after a conflict, %v conflicts, %v commit transactions",
			sc.gw.metric("augustus_sql_retries_total", "reason", "conflict"),
			sc.gw.metric("augustus_sql_conflicts_total"),
			sc.gw.metric("augustus_sql_short_transactions_total", "kind", "commit"))
	})
	t.Run("SIGTERMDrainsAndLosesNothingCommitted", func(t *testing.T) { testGatewaySIGTERM(t, sc) })
}

// mysqlCmd runs the mysql CLI (or mysqldump) against the gateway as root,
// with stdin; it returns stdout and stderr.
func (sc *sqlCluster) mysqlCmd(t *testing.T, tool string, stdin string, args ...string) (string, string, error) {
	t.Helper()
	host, port, _ := strings.Cut(sc.gw.addr, ":")
	cmd := exec.Command(tool, append([]string{"-h", host, "-P", port, "-u", "root"}, args...)...)
	// The password goes through the environment, as a script would pass it
	// without showing it in ps.
	cmd.Env = append(os.Environ(), "MYSQL_PWD="+sc.password)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return out.String(), errb.String(), err
	case <-time.After(3 * time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("%s did not finish within 3 minutes; output:\n%s\n%s", tool, out.String(), errb.String())
		return "", "", nil
	}
}

func testMysqlCLI(t *testing.T, sc *sqlCluster) {
	mysqlBin := requireTool(t, "mysql", "mariadb-client")
	script := `CREATE DATABASE cli;
USE cli;
CREATE TABLE cities (
  id INT PRIMARY KEY,
  name VARCHAR(40) NOT NULL,
  country CHAR(2) NOT NULL,
  pop INT,
  KEY by_country (country)
) PARTITION BY RANGE (id) (PARTITION p0 VALUES LESS THAN (100), PARTITION p1 VALUES LESS THAN (MAXVALUE));
INSERT INTO cities VALUES (1, 'Lisbon', 'PT', 545000), (2, 'Porto', 'PT', 232000), (150, 'Zurich', 'CH', 421000), (151, 'Geneva', 'CH', 203000);
SELECT name FROM cities WHERE country = 'CH' ORDER BY name;
SELECT country, SUM(pop) AS total FROM cities GROUP BY country ORDER BY country;
BEGIN;
UPDATE cities SET pop = pop + 1 WHERE id IN (1, 150);
COMMIT;
SELECT id, pop FROM cities WHERE id IN (1, 150) ORDER BY id;
DO 1;
SHOW DATABASES;
SHOW TABLES;
SHOW CREATE TABLE cities\G
SHOW INDEX FROM cities;
EXPLAIN PLAN SELECT name FROM cities WHERE country = 'PT';
`
	out, errOut, err := sc.mysqlCmd(t, mysqlBin, script, "--batch", "--raw")
	if err != nil {
		t.Fatalf("mysql: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	for _, want := range []string{
		"name\nGeneva\nZurich\n",
		"country\ttotal\nCH\t624000\nPT\t777000\n",
		"id\tpop\n1\t545001\n150\t421001\n",
		"Database\n", "\ncli\n",
		"Tables_in_cli\ncities\n",
		"KEY `by_country` (`country`)",
		"augustus:placement=range(",
		"cities\t1\tby_country\t1\tcountry",
		"IndexedTableAccess(cities)", "index: [cities.country]",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("mysql's output lacks %q:\n%s", want, out)
		}
	}
	// Both partitions of cities got a group of their own.
	if m := regexp.MustCompile(`range\(p0<100@(\d+),p1<MAXVALUE@(\d+)\)`).FindStringSubmatch(out); m == nil || m[1] == m[2] {
		t.Errorf("cities is not split over two groups: %v\n%s", m, out)
	}

	// An error ends the batch with MySQL's code, and leaves nothing behind.
	_, errOut, err = sc.mysqlCmd(t, mysqlBin, "INSERT INTO cli.cities VALUES (3, 'Braga', 'PT', 193000), (1, 'Dup', 'PT', 1);\n", "--batch")
	if err == nil || !strings.Contains(errOut, "ERROR 1062") {
		t.Fatalf("a duplicate key: want ERROR 1062, got %v: %s", err, errOut)
	}
	out, errOut, err = sc.mysqlCmd(t, mysqlBin, "SELECT COUNT(*) FROM cli.cities WHERE id = 3;\n", "--batch", "--skip-column-names")
	if err != nil || strings.TrimSpace(out) != "0" {
		t.Fatalf("the failed INSERT left a row: %q %v %s", out, err, errOut)
	}
}

func testMysqldump(t *testing.T, sc *sqlCluster) {
	mysqlBin := requireTool(t, "mysql", "mariadb-client")
	dumpBin := requireTool(t, "mysqldump", "mariadb-client")
	_, errOut, err := sc.mysqlCmd(t, mysqlBin, `CREATE DATABASE dumpme;
CREATE TABLE dumpme.people (id BIGINT PRIMARY KEY AUTO_INCREMENT, email VARCHAR(100) NOT NULL, born DATE, score DOUBLE, UNIQUE KEY by_email (email), KEY by_born (born));
CREATE TABLE dumpme.notes (id INT PRIMARY KEY, person BIGINT NOT NULL, body TEXT, KEY by_person (person));
`, "--batch")
	if err != nil {
		t.Fatalf("mysql: %v: %s", err, errOut)
	}
	dump, errOut, err := sc.mysqlCmd(t, dumpBin, "", "--no-data", "dumpme")
	if err != nil {
		t.Fatalf("mysqldump --no-data: %v\n%s\n%s", err, errOut, dump)
	}
	for _, want := range []string{"CREATE TABLE `people`", "UNIQUE KEY `by_email` (`email`)", "KEY `by_born` (`born`)", "CREATE TABLE `notes`", "-- Dump completed"} {
		if !strings.Contains(dump, want) {
			t.Errorf("the dump lacks %q:\n%s", want, dump)
		}
	}
	// The dump restores: the same tables in another database.
	if _, errOut, err := sc.mysqlCmd(t, mysqlBin, "CREATE DATABASE restored;\n"); err != nil {
		t.Fatalf("%v: %s", err, errOut)
	}
	if _, errOut, err := sc.mysqlCmd(t, mysqlBin, dump, "restored"); err != nil {
		t.Fatalf("restoring the dump: %v: %s", err, errOut)
	}
	show := func(db string) string {
		out, errOut, err := sc.mysqlCmd(t, mysqlBin, "SHOW CREATE TABLE "+db+".people\\G\n", "--batch")
		if err != nil {
			t.Fatalf("%v: %s", err, errOut)
		}
		// The placement comment names the group chosen at creation.
		return regexp.MustCompile(`augustus:placement=[^']*`).ReplaceAllString(strings.ReplaceAll(out, db, "DB"), "augustus:placement=…")
	}
	if a, b := show("dumpme"), show("restored"); a != b {
		t.Errorf("the restored table differs:\n%s\nfrom the original:\n%s", b, a)
	}
}

func testGoDriver(t *testing.T, sc *sqlCluster) {
	db := sc.open(t, "", "multiStatements=true", "parseTime=true")
	mustExec(t, db, "CREATE DATABASE drv",
		"CREATE TABLE drv.kv (k VARCHAR(64) PRIMARY KEY, v BLOB, n BIGINT, t DATETIME(6), f DOUBLE, KEY by_n (n)) PARTITION BY KEY (k)")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Prepared statements (go-sql-driver prepares when given arguments).
	stmt, err := db.PrepareContext(ctx, "INSERT INTO drv.kv VALUES (?, ?, ?, ?, ?)")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 27, 12, 30, 45, 123456000, time.UTC)
	for i := range 20 {
		if _, err := stmt.ExecContext(ctx, fmt.Sprintf("key-%02d", i), []byte{0, byte(i), 0xff}, i*i, at, float64(i)/3); err != nil {
			t.Fatalf("insert %d: %v", i, err)
		}
	}
	_ = stmt.Close()
	var v []byte
	var n int64
	var ts time.Time
	var f float64
	if err := db.QueryRowContext(ctx, "SELECT v, n, t, f FROM drv.kv WHERE k = ?", "key-07").Scan(&v, &n, &ts, &f); err != nil {
		t.Fatal(err)
	}
	if string(v) != string([]byte{0, 7, 0xff}) || n != 49 || !ts.Equal(at) || f != 7.0/3 {
		t.Fatalf("read back %v %d %v %v", v, n, ts, f)
	}
	// A range through the secondary index, across the hash-placed groups.
	var count int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM drv.kv WHERE n BETWEEN ? AND ?", 10, 100).Scan(&count); err != nil {
		t.Fatal(err)
	}
	if count != 7 { // 16, 25, 36, 49, 64, 81, 100
		t.Fatalf("COUNT over by_n = %d, want 7", count)
	}
	// Multi-statements: results in order.
	rows, err := db.QueryContext(ctx, "UPDATE drv.kv SET n = n + 1 WHERE k = 'key-01'; SELECT n FROM drv.kv WHERE k = 'key-01'")
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for {
		for rows.Next() {
			var x int64
			if err := rows.Scan(&x); err != nil {
				t.Fatal(err)
			}
			got = append(got, x)
		}
		if !rows.NextResultSet() {
			break
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	_ = rows.Close()
	if len(got) != 1 || got[0] != 2 {
		t.Fatalf("multi-statement results %v, want [2]", got)
	}
	// A read-only transaction refuses writes, and the connection stays.
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	mustExec(t, c, "START TRANSACTION READ ONLY")
	if _, err := c.ExecContext(ctx, "DELETE FROM drv.kv WHERE k = 'key-02'"); mysqlErrno(err) != 1792 {
		t.Fatalf("a write in a READ ONLY transaction: %v, want 1792", err)
	}
	mustExec(t, c, "ROLLBACK", "DO 1")
	// A syntax error is MySQL's 1064, with the connection kept.
	if _, err := c.ExecContext(ctx, "SELEKT 1"); mysqlErrno(err) != 1064 {
		t.Fatalf("a syntax error: %v, want 1064", err)
	}
	if err := c.PingContext(ctx); err != nil {
		t.Fatal(err)
	}
}

// testConcurrentIncrements: N increments of one row from several
// connections at once, each an autocommit UPDATE the gateway retries after
// a conflict, end with v = N (no lost update).
func testConcurrentIncrements(t *testing.T, sc *sqlCluster) {
	db := sc.open(t, "")
	db.SetMaxOpenConns(16)
	mustExec(t, db, "CREATE DATABASE inc", "CREATE TABLE inc.t (id INT PRIMARY KEY, v INT NOT NULL)", "INSERT INTO inc.t VALUES (1, 0)")
	const workers, each = 8, 10
	var wg sync.WaitGroup
	var mu sync.Mutex
	var deadlocks int
	errs := make(chan error, workers)
	start := time.Now()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			c, err := db.Conn(ctx)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			for i := 0; i < each; {
				_, err := c.ExecContext(ctx, "UPDATE inc.t SET v = v + 1 WHERE id = 1")
				switch {
				case err == nil:
					i++
				case mysqlErrno(err) == 1213:
					// The gateway's retries ran out: the statement did not
					// apply; the client runs it again, as MySQL clients do.
					mu.Lock()
					deadlocks++
					mu.Unlock()
				default:
					errs <- fmt.Errorf("worker %d: %w", w, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var v int
	if err := db.QueryRow("SELECT v FROM inc.t WHERE id = 1").Scan(&v); err != nil {
		t.Fatal(err)
	}
	if v != workers*each {
		t.Fatalf("v = %d after %d acknowledged increments: lost or doubled updates", v, workers*each)
	}
	t.Logf("%d increments from %d connections in %s: v = %d; %d statements ran out of the gateway's retries (1213) and were run again",
		workers*each, workers, time.Since(start).Round(time.Millisecond), v, deadlocks)
}

// testWriteSkew: two doctors on call; each transaction checks that another
// doctor is on call, then goes off call. Run together (both read before
// either writes), they must not both commit: the guards of their reads make
// one of them fail with 1213 (serializable, unlike snapshot isolation).
func testWriteSkew(t *testing.T, sc *sqlCluster) {
	db := sc.open(t, "")
	mustExec(t, db, "CREATE DATABASE hospital", "CREATE TABLE hospital.doctors (id INT PRIMARY KEY, name VARCHAR(20), on_call BOOL NOT NULL)")
	rounds := 5
	if !testing.Short() {
		rounds = 15
	}
	for r := range rounds {
		// (GMS turns DELETE without WHERE into TRUNCATE of the current
		// database's table, which fails with none selected: a WHERE keeps
		// it a DELETE.)
		mustExec(t, db, "DELETE FROM hospital.doctors WHERE id > 0", "INSERT INTO hospital.doctors VALUES (1, 'alice', TRUE), (2, 'bob', TRUE)")
		var read sync.WaitGroup
		read.Add(2)
		results := make(chan error, 2)
		for _, me := range []int{1, 2} {
			go func() {
				results <- offCall(db, me, &read)
			}()
		}
		committed := 0
		for range 2 {
			err := <-results
			switch {
			case err == nil:
				committed++
			case mysqlErrno(err) == 1213:
			default:
				t.Fatalf("round %d: %v", r, err)
			}
		}
		var onCall int
		if err := db.QueryRow("SELECT COUNT(*) FROM hospital.doctors WHERE on_call").Scan(&onCall); err != nil {
			t.Fatal(err)
		}
		if committed > 1 || onCall < 1 {
			t.Fatalf("round %d: write skew: %d transactions committed, %d doctors on call", r, committed, onCall)
		}
		if committed == 0 && onCall != 2 {
			t.Fatalf("round %d: nothing committed but %d on call", r, onCall)
		}
	}
}

// offCall is one doctor's transaction; read is released once its check
// has read, and it waits for the other's before writing.
func offCall(db *sql.DB, me int, read *sync.WaitGroup) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		read.Done()
		return err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it is a no-op
	var others int
	err = tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM hospital.doctors WHERE on_call AND id <> ?", me).Scan(&others)
	read.Done()
	if err != nil {
		return err
	}
	read.Wait()
	if others == 0 {
		return fmt.Errorf("doctor %d saw nobody else on call", me)
	}
	if _, err := tx.ExecContext(ctx, "UPDATE hospital.doctors SET on_call = FALSE WHERE id = ?", me); err != nil {
		return err
	}
	return tx.Commit()
}

func testSysbench(t *testing.T, sc *sqlCluster) {
	sb := requireTool(t, "sysbench", "sysbench")
	mustExec(t, sc.open(t, ""), "CREATE DATABASE sbtest")
	host, port, _ := strings.Cut(sc.gw.addr, ":")
	dur, threads, size := 10, 4, 1000
	if testing.Short() {
		dur, threads, size = 2, 2, 100
	}
	common := []string{"oltp_read_write", "--db-driver=mysql", "--mysql-host=" + host, "--mysql-port=" + port,
		"--mysql-user=root", "--mysql-password=" + sc.password, "--mysql-db=sbtest", "--tables=2", fmt.Sprintf("--table-size=%d", size)}
	run := func(args ...string) string {
		cmd := exec.Command(sb, append(common, args...)...)
		out, err := runWithTimeout(cmd, 5*time.Minute)
		if err != nil {
			t.Fatalf("sysbench %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	run("prepare")
	out := run("run", fmt.Sprintf("--threads=%d", threads), fmt.Sprintf("--time=%d", dur))
	m := regexp.MustCompile(`transactions:\s+(\d+)\s+\(([\d.]+) per sec`).FindStringSubmatch(out)
	if m == nil || m[1] == "0" {
		t.Fatalf("sysbench ran no transaction:\n%s", out)
	}
	if strings.Contains(out, "FATAL") {
		t.Fatalf("sysbench failed:\n%s", out)
	}
	t.Logf("sysbench oltp_read_write, %d threads, %d s, 2 tables of %d rows: %s transactions (%s/s) — a functional check on a shared machine, not a measurement\n%s",
		threads, dur, size, m[1], m[2], lastLines(out, 25))
	run("cleanup")
}

// runWithTimeout runs cmd and returns its combined output.
func runWithTimeout(cmd *exec.Cmd, timeout time.Duration) (string, error) {
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return "", err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return out.String(), err
	case <-time.After(timeout):
		_ = cmd.Process.Kill()
		<-done
		return out.String(), fmt.Errorf("%s did not finish within %s", filepath.Base(cmd.Path), timeout)
	}
}

// testGatewaySIGTERM stops the gateway with SIGTERM while a connection has
// a transaction open: the gateway exits 0, the transaction ends without
// committing (a new gateway does not see its row), and what was committed
// before is there.
func testGatewaySIGTERM(t *testing.T, sc *sqlCluster) {
	db := sc.open(t, "")
	mustExec(t, db, "CREATE DATABASE drain", "CREATE TABLE drain.t (id INT PRIMARY KEY)", "INSERT INTO drain.t VALUES (1)")
	ctx := context.Background()
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	mustExec(t, c, "BEGIN", "INSERT INTO drain.t VALUES (2)")
	start := time.Now()
	if err := sc.gw.stop(t, 40*time.Second); err != nil {
		t.Fatalf("the gateway exited with %v after SIGTERM:\n%s", err, sc.gw.out.String())
	}
	if !strings.Contains(sc.gw.out.String(), "augustus gateway: stopped.") {
		t.Fatalf("no stop message:\n%s", sc.gw.out.String())
	}
	t.Logf("the gateway stopped %s after SIGTERM", time.Since(start).Round(time.Millisecond))
	if _, err := c.ExecContext(ctx, "COMMIT"); err == nil {
		t.Fatal("COMMIT succeeded on a connection the stopped gateway closed")
	}
	sc.gw = startGateway(t, sc.dir)
	db2 := sc.open(t, "")
	var ids []int
	rows, err := db2.QueryContext(ctx, "SELECT id FROM drain.t ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(ids) != "[1]" {
		t.Fatalf("rows after the restart: %v, want [1]", ids)
	}
}
