// Package planning plans scans of Iceberg tables for icebloom serve: a
// request's filter bound to the table's schema before its literals are read
// (filter.go), iceberg-go's plan pruned by the icebloom index (lookup), a
// lookup of a new value planned from a base plan kept in memory without
// decoding a manifest (fastpath.go), each task's residual filter as local
// planning computes it (residual.go), all within one memory budget (caches
// in cache.go, the plans being computed in workbudget.go). It speaks no
// HTTP: package serve answers the REST endpoints with it, and the bench
// calls it directly.
package planning
