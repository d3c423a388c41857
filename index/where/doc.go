// Package where is the filter language of icebloom's lookup and scan: SQL
// as people write it after WHERE, parsed into iceberg-go expressions (Parse)
// and bound to a table's schema (Bind) with errors that name the column and
// the value that does not fit it. Column names match regardless of case
// unless the caller asks otherwise; a column the schema lacks is an
// *UnknownColumnError. Quote writes a literal back as the language spells it.
//
// The package only turns text into expressions: it reads no table, no index
// and no data. Planning a lookup with the expressions, and deciding which
// predicates the index can prune with, is index/lookup's job.
package where
