package backend

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/augustus-db/augustus/pkg/sql/catalog"
	"github.com/augustus-db/augustus/pkg/sql/rowenc"
	"github.com/augustus-db/augustus/pkg/sql/session"
	"github.com/augustus-db/augustus/pkg/txn/coord"
)

// pendingDDL is the schema change the running statement builds. Every DDL
// method of one statement adds to it (GMS calls CreateTable, then
// CreateIndex for each index, then the AUTO_INCREMENT setter), and GMS's
// implicit commit at the end of the statement sends it as ONE metadata
// transaction (session.DDL). Data work that cannot fit one transaction —
// an index backfill, clearing dropped rows — runs outside it.
type pendingDDL struct {
	p      *Provider
	change *catalog.Change
	// kick: the change left drop jobs for the schema changer.
	kick bool
}

// ddl returns the statement's pending schema change, starting one. DDL
// commits the SQL transaction first, as MySQL's implicit commit does.
func (p *Provider) ddl(ctx *sql.Context) (*pendingDDL, error) {
	sess, ok := session.FromContext(ctx)
	if !ok {
		return nil, fmt.Errorf("backend: the session is not an Augustus session")
	}
	if d, ok := sess.DDL().(*pendingDDL); ok && d.p == p {
		return d, nil
	}
	if !p.cfg.CanDDL {
		return nil, session.NoAdminKey()
	}
	if gt := ctx.GetTransaction(); gt != nil {
		tx, _ := gt.(*session.Txn)
		if tx != nil && tx.IsReadOnly() {
			return nil, session.ReadOnly()
		}
		if tx != nil && tx.Used() {
			if err := sess.CommitTransaction(ctx, tx); err != nil {
				return nil, err
			}
		}
	}
	d := &pendingDDL{p: p, change: p.cat.Current().Edit()}
	sess.SetDDL(d)
	return d, nil
}

// Commit implements session.DDL: the change in one metadata transaction.
func (d *pendingDDL) Commit(ctx *sql.Context) error {
	_, err := d.p.cat.Commit(ctx, d.change)
	if err != nil {
		return ddlErr(err)
	}
	if d.kick {
		d.p.changer.Kick()
	}
	return nil
}

// commitNow commits the change so far, mid-statement (an index must be
// write-only everywhere before it is backfilled), and starts a new one.
func (d *pendingDDL) commitNow(ctx *sql.Context) (*catalog.Snapshot, error) {
	s, err := d.p.cat.Commit(ctx, d.change)
	if err != nil {
		return nil, ddlErr(err)
	}
	if d.kick {
		d.p.changer.Kick()
		d.kick = false
	}
	d.change = s.Edit()
	return s, nil
}

func ddlErr(err error) error {
	switch {
	case errors.Is(err, catalog.ErrStale):
		return session.SchemaChangedError()
	case errors.Is(err, coord.ErrNoAdminKey):
		return session.NoAdminKey()
	}
	return err
}

// table returns a copy of a table descriptor of the change, to edit.
func (d *pendingDDL) table(id uint32) (*catalog.Table, error) {
	t, ok := d.change.Next().TableByID(id)
	if !ok {
		return nil, sql.ErrTableNotFound.New(fmt.Sprint(id))
	}
	return t.Clone(), nil
}

// created reports whether the change creates table id (it is not in the
// catalog yet: no row can exist, so its indexes need no backfill).
func (d *pendingDDL) created(id uint32) bool {
	_, ok := d.change.Base().TableByID(id)
	return !ok
}

// pending reports whether the table was created by the running statement.
func (t *Table) pending(ctx *sql.Context) bool {
	sess, ok := session.FromContext(ctx)
	if !ok {
		return false
	}
	d, ok := sess.DDL().(*pendingDDL)
	return ok && d.p == t.p && d.created(t.desc.ID)
}

func (d *pendingDDL) dropTable(t *catalog.Table) {
	d.change.DeleteTable(t.ID)
	span := rowenc.TableSpan(t.ID)
	d.change.AddJob("table "+t.Name, span.Start, span.End)
	d.kick = true
}

// newColumn builds a column descriptor from GMS's column.
func newColumn(id uint32, c *sql.Column) (catalog.Column, error) {
	if c.Generated != nil {
		return catalog.Column{}, sql.ErrUnsupportedFeature.New("generated columns")
	}
	if err := rowenc.Supported(c.Type, false); err != nil {
		return catalog.Column{}, sql.ErrUnsupportedFeature.New(fmt.Sprintf("column %s: %v", c.Name, err))
	}
	col := catalog.Column{ID: id, Name: c.Name, Nullable: c.Nullable, AutoIncrement: c.AutoIncrement, Comment: c.Comment}
	col.SetType(c.Type)
	if c.Default != nil {
		col.Default = c.Default.String()
	}
	if c.OnUpdate != nil {
		col.OnUpdate = c.OnUpdate.String()
	}
	return col, nil
}

func (d *pendingDDL) createTable(ctx *sql.Context, db *Database, name string, schema sql.PrimaryKeySchema, collation sql.CollationID, comment string) error {
	next := d.change.Next()
	if _, ok := next.Table(db.id, name); ok {
		return sql.ErrTableAlreadyExists.New(name)
	}
	t := &catalog.Table{DB: db.id, Name: name, Collation: collation, NextColumnID: 1, NextIndexID: 2}
	for _, c := range schema.Schema {
		col, err := newColumn(t.NextColumnID, c)
		if err != nil {
			return err
		}
		t.Columns = append(t.Columns, col)
		t.NextColumnID++
	}
	for _, o := range schema.PkOrdinals {
		if err := rowenc.Supported(schema.Schema[o].Type, true); err != nil {
			return sql.ErrUnsupportedFeature.New(fmt.Sprintf("primary key column %s: %v", schema.Schema[o].Name, err))
		}
		t.PK = append(t.PK, t.Columns[o].ID)
	}
	spec, rest, err := placementFromComment(comment)
	if err != nil {
		return err
	}
	t.Comment = rest
	if sess, ok := session.FromContext(ctx); ok && sess.Flags().Placement != "" {
		if spec, err = ParsePlacement(sess.Flags().Placement); err != nil {
			return err
		}
	}
	if spec == nil {
		spec = &PlacementSpec{Kind: catalog.PlaceGroup, Groups: []int{-1}}
	}
	if t.Placement, err = spec.resolve(next.Groups(), d.change.NextGroup); err != nil {
		return err
	}
	t.ID = d.change.AllocID()
	if err := d.change.PutTable(t); err != nil {
		return err
	}
	m, err := catalog.PlaceTable(ctx, d.change.Next().Map, t)
	if err != nil {
		return err
	}
	d.change.SetMap(m)
	return nil
}

// refreshDesc points the table at its edited descriptor (GMS keeps using
// the table object after ALTER TABLE, e.g. to fill an added column's
// default).
func (t *Table) refreshDesc(d *pendingDDL) error {
	nt, ok := d.change.Next().TableByID(t.desc.ID)
	if !ok {
		return nil
	}
	ti, err := t.p.info(t.db, nt)
	if err != nil {
		return err
	}
	t.desc, t.info = nt, ti
	return nil
}

// AddColumn implements sql.AlterableTable. Rows are not rewritten: a row
// without the new column reads the column's default as ADD COLUMN evaluated
// it (recorded in the catalog), and GMS's pass that fills the default sends
// updates that change nothing, which write nothing.
func (t *Table) AddColumn(ctx *sql.Context, column *sql.Column, order *sql.ColumnOrder) error {
	if column.AutoIncrement || column.PrimaryKey {
		return sql.ErrUnsupportedFeature.New("adding an AUTO_INCREMENT or PRIMARY KEY column to an existing table")
	}
	d, err := t.p.ddl(ctx)
	if err != nil {
		return err
	}
	c, err := d.table(t.desc.ID)
	if err != nil {
		return err
	}
	if col, _ := c.ColumnByName(column.Name); col != nil {
		return sql.ErrColumnExists.New(column.Name)
	}
	col, err := newColumn(c.NextColumnID, column)
	if err != nil {
		return err
	}
	c.NextColumnID++
	var missing any
	switch {
	case column.Default != nil:
		v, err := column.Default.Eval(ctx, nil)
		if err != nil {
			return err
		}
		if missing, _, err = column.Type.Convert(ctx, v); err != nil {
			return err
		}
	case !column.Nullable:
		missing = column.Type.Zero()
	}
	if missing != nil {
		if col.Missing, err = rowenc.AppendValueOf(nil, column.Type, missing); err != nil {
			return err
		}
		col.MissingSet = true
	}
	pos, err := insertPos(c, order)
	if err != nil {
		return err
	}
	c.Columns = append(c.Columns[:pos], append([]catalog.Column{col}, c.Columns[pos:]...)...)
	if err := d.change.PutTable(c); err != nil {
		return err
	}
	return t.refreshDesc(d)
}

func insertPos(c *catalog.Table, order *sql.ColumnOrder) (int, error) {
	switch {
	case order == nil:
		return len(c.Columns), nil
	case order.First:
		return 0, nil
	case order.AfterColumn != "":
		_, i := c.ColumnByName(order.AfterColumn)
		if i < 0 {
			return 0, sql.ErrTableColumnNotFound.New(c.Name, order.AfterColumn)
		}
		return i + 1, nil
	}
	return len(c.Columns), nil
}

// DropColumn implements sql.AlterableTable: the column leaves the catalog;
// stored values keep its bytes until their row is next written (readers
// skip unknown column ids). A column in the primary key or an index cannot
// be dropped: drop the index first.
func (t *Table) DropColumn(ctx *sql.Context, name string) error {
	d, err := t.p.ddl(ctx)
	if err != nil {
		return err
	}
	c, err := d.table(t.desc.ID)
	if err != nil {
		return err
	}
	col, i := c.ColumnByName(name)
	if col == nil {
		return sql.ErrTableColumnNotFound.New(c.Name, name)
	}
	for _, id := range c.PK {
		if id == col.ID {
			return sql.ErrUnsupportedFeature.New("dropping a primary key column")
		}
	}
	for _, ix := range c.Indexes {
		for _, id := range ix.Columns {
			if id == col.ID {
				return sql.ErrUnsupportedFeature.New(fmt.Sprintf("dropping column %s used by index %s (drop the index first)", name, ix.Name))
			}
		}
	}
	c.Columns = append(c.Columns[:i], c.Columns[i+1:]...)
	if err := d.change.PutTable(c); err != nil {
		return err
	}
	return t.refreshDesc(d)
}

// ModifyColumn implements sql.AlterableTable: renames, defaults, comments,
// NULL-ability relaxed, position, and type changes that every stored value
// and key still fits (a longer string of the same collation, a wider
// integer outside keys). Anything that would need the rows rewritten is
// refused.
func (t *Table) ModifyColumn(ctx *sql.Context, name string, column *sql.Column, order *sql.ColumnOrder) error {
	d, err := t.p.ddl(ctx)
	if err != nil {
		return err
	}
	c, err := d.table(t.desc.ID)
	if err != nil {
		return err
	}
	old, i := c.ColumnByName(name)
	if old == nil {
		return sql.ErrTableColumnNotFound.New(c.Name, name)
	}
	if !strings.EqualFold(name, column.Name) {
		if other, _ := c.ColumnByName(column.Name); other != nil {
			return sql.ErrColumnExists.New(column.Name)
		}
	}
	if err := compatible(c, old, column); err != nil {
		return err
	}
	col, err := newColumn(old.ID, column)
	if err != nil {
		return err
	}
	col.Missing, col.MissingSet = old.Missing, old.MissingSet
	c.Columns = append(c.Columns[:i], c.Columns[i+1:]...)
	pos := i
	if order != nil {
		if pos, err = insertPos(c, order); err != nil {
			return err
		}
	}
	c.Columns = append(c.Columns[:pos], append([]catalog.Column{col}, c.Columns[pos:]...)...)
	if err := d.change.PutTable(c); err != nil {
		return err
	}
	return t.refreshDesc(d)
}

// compatible refuses column changes the stored data may not satisfy.
func compatible(t *catalog.Table, old *catalog.Column, nc *sql.Column) error {
	inKey := false
	for _, id := range t.PK {
		inKey = inKey || id == old.ID
	}
	for _, ix := range t.Indexes {
		for _, id := range ix.Columns {
			inKey = inKey || id == old.ID
		}
	}
	if old.Nullable && !nc.Nullable {
		return sql.ErrUnsupportedFeature.New("making a column NOT NULL (existing rows are not checked)")
	}
	if nc.AutoIncrement != old.AutoIncrement {
		return sql.ErrUnsupportedFeature.New("adding or removing AUTO_INCREMENT on an existing column")
	}
	ot, nt := old.Type(), nc.Type
	if ot.Equals(nt) || catalog.TypeString(ot) == catalog.TypeString(nt) {
		return nil
	}
	ok, ow := rowenc.KindOf(ot)
	nk, nw := rowenc.KindOf(nt)
	refuse := sql.ErrUnsupportedFeature.New(fmt.Sprintf("changing column %s from %s to %s (the rows would need rewriting)", old.Name, ot, nt))
	if ok != nk {
		return refuse
	}
	switch ok {
	case rowenc.KindInt, rowenc.KindUint:
		if inKey || nw < ow {
			return refuse
		}
	case rowenc.KindBytes, rowenc.KindCollated:
		os, ok1 := ot.(sql.StringType)
		ns, ok2 := nt.(sql.StringType)
		if !ok1 || !ok2 || os.Collation() != ns.Collation() || ns.MaxCharacterLength() < os.MaxCharacterLength() {
			return refuse
		}
	default:
		return refuse
	}
	return nil
}

// CreateIndex implements sql.IndexAlterableTable. On a table the statement
// creates, the index is public at once (no row can exist). On an existing
// table, as CockroachDB's schema changer does: the index enters the catalog
// write-only (every writer maintains it, no reader uses it), its entries are
// backfilled in chunks of ordinary transactions, and a second metadata
// transaction makes it public.
func (t *Table) CreateIndex(ctx *sql.Context, def sql.IndexDef) error {
	if def.IsFullText() || def.IsSpatial() || def.IsVector() {
		return sql.ErrUnsupportedFeature.New("FULLTEXT, SPATIAL and VECTOR indexes")
	}
	if def.IsPrimary() {
		return sql.ErrUnsupportedFeature.New("changing the primary key of an existing table")
	}
	d, err := t.p.ddl(ctx)
	if err != nil {
		return err
	}
	c, err := d.table(t.desc.ID)
	if err != nil {
		return err
	}
	if def.Name == "" || strings.EqualFold(def.Name, "primary") || c.IndexByName(def.Name) != nil {
		return sql.ErrDuplicateKey.New(def.Name)
	}
	ix := catalog.Index{ID: c.NextIndexID, Name: def.Name, Unique: def.IsUnique(), Comment: def.Comment}
	c.NextIndexID++
	for _, ic := range def.Columns {
		col, _ := c.ColumnByName(ic.Name)
		if col == nil {
			return sql.ErrKeyColumnDoesNotExist.New(ic.Name)
		}
		if ic.Length > 0 && def.IsUnique() {
			return sql.ErrUnsupportedIndexPrefix.New(ic.Name)
		}
		if err := rowenc.Supported(col.Type(), true); err != nil {
			return sql.ErrUnsupportedFeature.New(fmt.Sprintf("index on %s: %v", ic.Name, err))
		}
		ix.Columns = append(ix.Columns, col.ID)
	}
	if d.created(c.ID) {
		c.Indexes = append(c.Indexes, ix)
		if err := d.change.PutTable(c); err != nil {
			return err
		}
		return t.refreshDesc(d)
	}
	ix.State = catalog.IndexWriteOnly
	c.Indexes = append(c.Indexes, ix)
	if err := d.change.PutTable(c); err != nil {
		return err
	}
	s, err := d.commitNow(ctx)
	if err != nil {
		return err
	}
	nt, _ := s.TableByID(c.ID)
	if err := t.p.changer.backfill(ctx, t.db, s, nt, ix.ID); err != nil {
		// Undo: the index leaves the catalog, its entries are cleared.
		if e2 := d.commitRetrying(ctx, func(ch *catalog.Change) error {
			c2, ok := ch.Next().TableByID(c.ID)
			if !ok {
				return nil
			}
			c2 = c2.Clone()
			c2.Indexes = removeIndex(c2.Indexes, ix.ID)
			sp := rowenc.IndexSpan(c.ID, ix.ID)
			ch.AddJob("index "+ix.Name, sp.Start, sp.End)
			d.kick = true
			return ch.PutTable(c2)
		}); e2 != nil {
			t.p.cfg.Logger.Warn("backend: could not remove a failed index", "table", c.Name, "index", ix.Name, "err", e2)
		}
		return err
	}
	// Public, in a metadata transaction of its own now: another schema
	// change committed meanwhile (another front-end's, or a drop job's end)
	// must not make the statement run again, since the index exists.
	return d.commitRetrying(ctx, func(ch *catalog.Change) error {
		c2, ok := ch.Next().TableByID(c.ID)
		if !ok {
			return sql.ErrTableNotFound.New(c.Name)
		}
		c2 = c2.Clone()
		for i := range c2.Indexes {
			if c2.Indexes[i].ID == ix.ID {
				c2.Indexes[i].State = catalog.IndexPublic
			}
		}
		return ch.PutTable(c2)
	})
}

// commitRetrying applies edit to the current catalog and commits it now,
// reloading and applying it again when another change committed first
// (bounded). The statement's pending change starts afresh after it.
func (d *pendingDDL) commitRetrying(ctx *sql.Context, edit func(*catalog.Change) error) error {
	var err error
	for range 8 {
		ch := d.p.cat.Current().Edit()
		if err = edit(ch); err != nil {
			return err
		}
		d.change = ch
		if _, err = d.commitNow(ctx); err == nil {
			return nil
		}
		if !errors.Is(err, session.ErrSchemaChanged) {
			return err
		}
		if _, err = d.p.cat.Reload(ctx); err != nil {
			return err
		}
	}
	return err
}

func removeIndex(ixs []catalog.Index, id uint32) []catalog.Index {
	out := ixs[:0:0]
	for _, ix := range ixs {
		if ix.ID != id {
			out = append(out, ix)
		}
	}
	return out
}

// DropIndex implements sql.IndexAlterableTable: the index leaves the
// catalog; its entries are cleared in the background.
func (t *Table) DropIndex(ctx *sql.Context, name string) error {
	d, err := t.p.ddl(ctx)
	if err != nil {
		return err
	}
	c, err := d.table(t.desc.ID)
	if err != nil {
		return err
	}
	ix := c.IndexByName(name)
	if ix == nil {
		return sql.ErrIndexNotFound.New(name)
	}
	id := ix.ID
	c.Indexes = removeIndex(c.Indexes, id)
	if err := d.change.PutTable(c); err != nil {
		return err
	}
	if !d.created(c.ID) {
		sp := rowenc.IndexSpan(c.ID, id)
		d.change.AddJob("index "+name, sp.Start, sp.End)
		d.kick = true
	}
	return t.refreshDesc(d)
}

// RenameIndex implements sql.IndexAlterableTable.
func (t *Table) RenameIndex(ctx *sql.Context, from, to string) error {
	d, err := t.p.ddl(ctx)
	if err != nil {
		return err
	}
	c, err := d.table(t.desc.ID)
	if err != nil {
		return err
	}
	ix := c.IndexByName(from)
	if ix == nil {
		return sql.ErrIndexNotFound.New(from)
	}
	if c.IndexByName(to) != nil {
		return sql.ErrDuplicateKey.New(to)
	}
	ix.Name = to
	if err := d.change.PutTable(c); err != nil {
		return err
	}
	return t.refreshDesc(d)
}

// Truncate implements sql.TruncateableTable. TRUNCATE TABLE gives the table
// a new id (and a new, empty span placed as the old one); the old span is
// cleared in the background, and AUTO_INCREMENT starts over. GMS also calls
// Truncate for DELETE without WHERE, which must stay a transactional delete:
// the statement runner's flags tell them apart.
func (t *Table) Truncate(ctx *sql.Context) (int, error) {
	sess, ok := session.FromContext(ctx)
	if !ok || !sess.Flags().Truncate {
		return t.deleteAll(ctx)
	}
	d, err := t.p.ddl(ctx)
	if err != nil {
		return 0, err
	}
	c, err := d.table(t.desc.ID)
	if err != nil {
		return 0, err
	}
	old := c.ID
	d.change.DeleteTable(old)
	if !d.created(old) {
		sp := rowenc.TableSpan(old)
		d.change.AddJob("truncated table "+c.Name, sp.Start, sp.End)
		d.kick = true
	}
	c.ID = d.change.AllocID()
	c.AutoIncrementStart = 0
	if err := d.change.PutTable(c); err != nil {
		return 0, err
	}
	m, err := catalog.PlaceTable(ctx, d.change.Next().Map, c)
	if err != nil {
		return 0, err
	}
	d.change.SetMap(m)
	return 0, nil
}

// deleteAll deletes every row in the SQL transaction.
func (t *Table) deleteAll(ctx *sql.Context) (int, error) {
	it, err := t.PartitionRows(ctx, partition{})
	if err != nil {
		return 0, err
	}
	e := &editor{t: t}
	n := 0
	for {
		row, err := it.Next(ctx)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return n, nil
			}
			return n, err
		}
		if err := e.Delete(ctx, row); err != nil {
			return n, err
		}
		n++
	}
}
