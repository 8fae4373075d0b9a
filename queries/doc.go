// Package queries owns the catalog (tables and views, persisted in the meta
// store) and the lifecycle of continuous queries: it executes SQL
// statements, plans views and starts, replaces, drops and recovers their
// jobs at boot. It is the one place that ties SQL to running graphs.
// Ingested rows are decoded and validated by package value (EncodeRows)
// and appended here to their table's log.
//
// Threading: Engine's methods are safe for concurrent use; catalog changes
// are serialized by Engine.mu.
package queries
