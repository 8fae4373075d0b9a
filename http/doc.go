// Package httpapi serves the HTTP API (docs/http-api.md, docs/openapi.yaml) with chi: SQL,
// ingest, tables, queries, results, checkpoints, health and metrics, and
// the web console's assets. Handlers translate between HTTP and package
// queries; errors are application/problem+json.
//
// Threading: handlers run on net/http's goroutines and call the
// concurrency-safe queries.Engine.
package httpapi
