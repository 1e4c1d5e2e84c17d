// Package archtest holds the test that keeps the layering of DESIGN.md §2:
// which packages each package may depend on. It has no code of its own.
package archtest
