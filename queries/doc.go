// Package queries owns the catalog (tables and views, persisted in the meta
// store) and the lifecycle of continuous queries: it executes SQL
// statements, plans views and starts, replaces, drops and recovers their
// jobs at boot. It is the one place that ties SQL to running graphs. It
// also decodes and validates ingested rows against a table's schema.
//
// Threading: Engine's methods are safe for concurrent use; catalog changes
// are serialized by Engine.mu.
package queries
