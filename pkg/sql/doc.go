// Package sql will hold the SQL front-end (DESIGN.md §6): a go-mysql-server
// backend that turns statements into guarded short transactions, the MySQL
// wire gateway, the database/sql driver and the psql-style shell.
//
// Nothing is implemented here yet; it builds on pkg/txn, which does not
// exist yet either. This file keeps the package in the tree the design
// describes.
package sql
