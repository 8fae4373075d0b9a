// Package cluster owns what several streamsql servers sharing a Kafka
// cluster agree on (issue 23, cluster mode; single-server mode uses none
// of it): a server's identity and the replicated catalog.
//
// Server identity. ServerID reads the id stored in a data directory
// (`server-id`), or makes one at the first start (random, written with
// fsync and a rename): it survives restarts, so it can be a consumer
// group's static member id and a stable transactional id, and it never
// moves to another data directory.
//
// The catalog log. Every DDL statement of a cluster goes through one
// single-partition topic, `_streamsql.<cluster>.catalog` (CatalogTopic),
// as ksqlDB's command topic: a server appends a statement (Append: an
// idempotent producer, acks from every in-sync replica, the record's
// offset returned) and every server applies the records in offset order
// (Tail), the proposer included, so all of them build the same catalog.
// There is no compare-and-set in Kafka: two servers may append statements
// that conflict (CREATE VIEW v on both); the first in offset order wins
// everywhere and the second fails everywhere, when applied, and its
// proposer reports that failure. An offset is never reused, so the
// offsets of a catalog's records are ids that never repeat across the
// cluster. The topic keeps its records forever (retention.ms -1): a new
// server replays it from offset 0.
//
// Threading. A Catalog's Append may be called from any goroutine; Tail
// runs its callback on the caller's goroutine, one record at a time, in
// offset order, until its context ends or the callback fails. Close ends
// both.
package cluster
