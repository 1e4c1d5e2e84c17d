package e2e

import (
	"testing"
	"time"

	gormmysql "gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// gormUserV1 and gormUserV2 are one model before and after a change: V2
// adds a column and an index, which AutoMigrate finds missing through
// information_schema and adds with ALTER TABLE.
type gormUserV1 struct {
	ID        uint   `gorm:"primaryKey"`
	Email     string `gorm:"size:120;uniqueIndex"`
	Name      string `gorm:"size:80"`
	CreatedAt time.Time
}

func (gormUserV1) TableName() string { return "users" }

type gormUserV2 struct {
	ID        uint   `gorm:"primaryKey"`
	Email     string `gorm:"size:120;uniqueIndex"`
	Name      string `gorm:"size:80"`
	Team      string `gorm:"size:40;index"`
	CreatedAt time.Time
}

func (gormUserV2) TableName() string { return "users" }

// testGORM runs GORM's migrator, which reads information_schema (SCHEMATA,
// TABLES, COLUMNS, STATISTICS) to decide what to create or alter.
func testGORM(t *testing.T, sc *sqlCluster) {
	mustExec(t, sc.open(t, ""), "CREATE DATABASE orm")
	db, err := gorm.Open(gormmysql.Open(sc.dsn("orm", "parseTime=true")), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.AutoMigrate(&gormUserV1{}); err != nil {
		t.Fatalf("AutoMigrate (create): %v", err)
	}
	if err := db.AutoMigrate(&gormUserV1{}); err != nil {
		t.Fatalf("AutoMigrate (unchanged): %v", err)
	}
	if !db.Migrator().HasTable(&gormUserV1{}) || !db.Migrator().HasIndex(&gormUserV1{}, "Email") {
		t.Fatal("the migrator does not see the table or its unique index")
	}
	if err := db.Create(&gormUserV1{Email: "ada@example.org", Name: "Ada"}).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.AutoMigrate(&gormUserV2{}); err != nil {
		t.Fatalf("AutoMigrate (add a column and an index): %v", err)
	}
	if !db.Migrator().HasColumn(&gormUserV2{}, "Team") || !db.Migrator().HasIndex(&gormUserV2{}, "Team") {
		t.Fatal("the new column or index is missing")
	}
	if err := db.Model(&gormUserV2{}).Where("email = ?", "ada@example.org").Update("team", "engines").Error; err != nil {
		t.Fatal(err)
	}
	var u gormUserV2
	if err := db.Where("team = ?", "engines").First(&u).Error; err != nil {
		t.Fatal(err)
	}
	if u.Name != "Ada" || u.ID == 0 || u.CreatedAt.IsZero() {
		t.Fatalf("read back %+v", u)
	}
	// A duplicate of the unique index is refused.
	if err := db.Create(&gormUserV2{Email: "ada@example.org", Name: "Other"}).Error; mysqlErrno(err) != 1062 {
		t.Fatalf("a duplicate email: %v, want 1062", err)
	}
	types, err := db.Migrator().ColumnTypes(&gormUserV2{})
	if err != nil || len(types) != 5 {
		t.Fatalf("ColumnTypes: %d columns, %v", len(types), err)
	}
}
