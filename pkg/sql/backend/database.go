package backend

import (
	"github.com/dolthub/go-mysql-server/sql"

	"github.com/augustus-db/augustus/pkg/sql/catalog"
)

// Database is a GMS database: a name over the catalog. It holds no state:
// every lookup reads the catalog snapshot the statement sees.
type Database struct {
	p    *Provider
	name string
	id   uint32
}

var (
	_ sql.Database            = (*Database)(nil)
	_ sql.TableCreator        = (*Database)(nil)
	_ sql.IndexedTableCreator = (*Database)(nil)
	_ sql.TableDropper        = (*Database)(nil)
	_ sql.TableRenamer        = (*Database)(nil)
	_ sql.CollatedDatabase    = (*Database)(nil)
)

// Name implements sql.Nameable.
func (d *Database) Name() string { return d.name }

// GetTableInsensitive implements sql.Database. A table this front-end does
// not know may have been created by another one: the catalog is refreshed
// before the name is declared unknown.
func (d *Database) GetTableInsensitive(ctx *sql.Context, name string) (sql.Table, bool, error) {
	if t, ok, err := d.table(ctx, name); ok || err != nil {
		return t, ok, err
	}
	d.p.refresh(ctx)
	return d.table(ctx, name)
}

func (d *Database) table(ctx *sql.Context, name string) (sql.Table, bool, error) {
	s := d.p.snapshot(ctx)
	t, ok := s.Table(d.id, name)
	if !ok {
		return nil, false, nil
	}
	tb, err := d.p.newTable(d.name, s, t)
	if err != nil {
		return nil, false, err
	}
	return tb, true, nil
}

// GetTableNames implements sql.Database from the local catalog (GMS calls it
// on ordinary statements too; see Provider.AllDatabases).
func (d *Database) GetTableNames(ctx *sql.Context) ([]string, error) {
	var names []string
	for _, t := range d.p.snapshot(ctx).Tables(d.id) {
		names = append(names, t.Name)
	}
	return names, nil
}

// GetCollation implements sql.CollatedDatabase.
func (d *Database) GetCollation(ctx *sql.Context) sql.CollationID {
	if db, ok := d.p.snapshot(ctx).DatabaseByID(d.id); ok && db.Collation != sql.Collation_Unspecified {
		return db.Collation
	}
	return sql.Collation_Default
}

// SetCollation implements sql.CollatedDatabase (ALTER DATABASE ...
// COLLATE).
func (d *Database) SetCollation(ctx *sql.Context, collation sql.CollationID) error {
	pd, err := d.p.ddl(ctx)
	if err != nil {
		return err
	}
	db, ok := pd.change.Next().DatabaseByID(d.id)
	if !ok {
		return sql.ErrDatabaseNotFound.New(d.name)
	}
	c := *db
	c.Collation = collation
	pd.change.PutDatabase(&c)
	return nil
}

// CreateTable implements sql.TableCreator.
func (d *Database) CreateTable(ctx *sql.Context, name string, schema sql.PrimaryKeySchema, collation sql.CollationID, comment string) error {
	pd, err := d.p.ddl(ctx)
	if err != nil {
		return err
	}
	return pd.createTable(ctx, d, name, schema, collation, comment)
}

// CreateIndexedTable implements sql.IndexedTableCreator: the primary key is
// the index definition's columns.
func (d *Database) CreateIndexedTable(ctx *sql.Context, name string, schema sql.PrimaryKeySchema, idx sql.IndexDef, collation sql.CollationID) error {
	pd, err := d.p.ddl(ctx)
	if err != nil {
		return err
	}
	var ords []int
	for _, c := range idx.Columns {
		if c.Length > 0 {
			return sql.ErrUnsupportedIndexPrefix.New(c.Name)
		}
		i := schema.Schema.IndexOfColName(c.Name)
		if i < 0 {
			return sql.ErrKeyColumnDoesNotExist.New(c.Name)
		}
		ords = append(ords, i)
	}
	schema.PkOrdinals = ords
	return pd.createTable(ctx, d, name, schema, collation, idx.Comment)
}

// DropTable implements sql.TableDropper: the table leaves the catalog in
// the statement's metadata transaction; its rows are cleared afterwards in
// the background (a drop job).
func (d *Database) DropTable(ctx *sql.Context, name string) error {
	pd, err := d.p.ddl(ctx)
	if err != nil {
		return err
	}
	t, ok := pd.change.Next().Table(d.id, name)
	if !ok {
		return sql.ErrTableNotFound.New(name)
	}
	pd.dropTable(t)
	return nil
}

// RenameTable implements sql.TableRenamer.
func (d *Database) RenameTable(ctx *sql.Context, oldName, newName string) error {
	pd, err := d.p.ddl(ctx)
	if err != nil {
		return err
	}
	next := pd.change.Next()
	t, ok := next.Table(d.id, oldName)
	if !ok {
		return sql.ErrTableNotFound.New(oldName)
	}
	if _, ok := next.Table(d.id, newName); ok {
		return sql.ErrTableAlreadyExists.New(newName)
	}
	c := t.Clone()
	c.Name = newName
	return pd.change.PutTable(c)
}

func (d *Database) descriptor(ctx *sql.Context) (*catalog.Database, bool) {
	return d.p.snapshot(ctx).DatabaseByID(d.id)
}
