package backend

import (
	"strings"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/augustus-db/augustus/pkg/sql/catalog"
)

// Views and CHECK constraints live in the catalog like tables, so every
// front-end has them (GMS would otherwise keep views in the memory of the
// process that created them).

var (
	_ sql.ViewDatabase        = (*Database)(nil)
	_ sql.CheckTable          = (*Table)(nil)
	_ sql.CheckAlterableTable = (*Table)(nil)
)

// CreateView implements sql.ViewDatabase.
func (d *Database) CreateView(ctx *sql.Context, name, selectStatement, createViewStmt string) error {
	pd, err := d.p.ddl(ctx)
	if err != nil {
		return err
	}
	next := pd.change.Next()
	db, ok := next.DatabaseByID(d.id)
	if !ok {
		return sql.ErrDatabaseNotFound.New(d.name)
	}
	if _, ok := next.Table(d.id, name); ok {
		return sql.ErrTableAlreadyExists.New(name)
	}
	for _, v := range db.Views {
		if strings.EqualFold(v.Name, name) {
			return sql.ErrExistingView.New(d.name, name)
		}
	}
	c := db.Clone()
	c.Views = append(c.Views, catalog.View{Name: name, Text: selectStatement, Create: createViewStmt,
		SQLMode: sql.LoadSqlMode(ctx).String()})
	pd.change.PutDatabase(c)
	return nil
}

// DropView implements sql.ViewDatabase.
func (d *Database) DropView(ctx *sql.Context, name string) error {
	pd, err := d.p.ddl(ctx)
	if err != nil {
		return err
	}
	db, ok := pd.change.Next().DatabaseByID(d.id)
	if !ok {
		return sql.ErrDatabaseNotFound.New(d.name)
	}
	c := db.Clone()
	c.Views = c.Views[:0]
	for _, v := range db.Views {
		if !strings.EqualFold(v.Name, name) {
			c.Views = append(c.Views, v)
		}
	}
	if len(c.Views) == len(db.Views) {
		return sql.ErrViewDoesNotExist.New(d.name, name)
	}
	pd.change.PutDatabase(c)
	return nil
}

// GetViewDefinition implements sql.ViewDatabase.
func (d *Database) GetViewDefinition(ctx *sql.Context, name string) (sql.ViewDefinition, bool, error) {
	db, ok := d.descriptor(ctx)
	if !ok {
		return sql.ViewDefinition{}, false, nil
	}
	for _, v := range db.Views {
		if strings.EqualFold(v.Name, name) {
			return viewDef(v), true, nil
		}
	}
	return sql.ViewDefinition{}, false, nil
}

// AllViews implements sql.ViewDatabase.
func (d *Database) AllViews(ctx *sql.Context) ([]sql.ViewDefinition, error) {
	db, ok := d.descriptor(ctx)
	if !ok {
		return nil, nil
	}
	var out []sql.ViewDefinition
	for _, v := range db.Views {
		out = append(out, viewDef(v))
	}
	return out, nil
}

func viewDef(v catalog.View) sql.ViewDefinition {
	return sql.ViewDefinition{Name: v.Name, TextDefinition: v.Text, CreateViewStatement: v.Create, SqlMode: v.SQLMode}
}

// GetChecks implements sql.CheckTable.
func (t *Table) GetChecks(*sql.Context) ([]sql.CheckDefinition, error) {
	var out []sql.CheckDefinition
	for _, c := range t.desc.Checks {
		out = append(out, sql.CheckDefinition{Name: c.Name, CheckExpression: c.Expr, Enforced: c.Enforced})
	}
	return out, nil
}

// CreateCheck implements sql.CheckAlterableTable. Rows already stored are
// not checked (as with MySQL's NOT ENFORCED; a check added to a table with
// rows is refused unless the table was created by this statement).
func (t *Table) CreateCheck(ctx *sql.Context, check *sql.CheckDefinition) error {
	d, err := t.p.ddl(ctx)
	if err != nil {
		return err
	}
	if check.Enforced && !d.created(t.desc.ID) {
		return sql.ErrUnsupportedFeature.New("adding an enforced CHECK to an existing table (its rows are not checked); add it NOT ENFORCED")
	}
	c, err := d.table(t.desc.ID)
	if err != nil {
		return err
	}
	for _, ck := range c.Checks {
		if strings.EqualFold(ck.Name, check.Name) {
			return sql.ErrDuplicateKey.New(check.Name)
		}
	}
	c.Checks = append(c.Checks, catalog.Check{Name: check.Name, Expr: check.CheckExpression, Enforced: check.Enforced})
	if err := d.change.PutTable(c); err != nil {
		return err
	}
	return t.refreshDesc(d)
}

// DropCheck implements sql.CheckAlterableTable.
func (t *Table) DropCheck(ctx *sql.Context, name string) error {
	d, err := t.p.ddl(ctx)
	if err != nil {
		return err
	}
	c, err := d.table(t.desc.ID)
	if err != nil {
		return err
	}
	n := len(c.Checks)
	out := c.Checks[:0:0]
	for _, ck := range c.Checks {
		if !strings.EqualFold(ck.Name, name) {
			out = append(out, ck)
		}
	}
	if len(out) == n {
		return sql.ErrUnknownConstraint.New(name)
	}
	c.Checks = out
	if err := d.change.PutTable(c); err != nil {
		return err
	}
	return t.refreshDesc(d)
}
