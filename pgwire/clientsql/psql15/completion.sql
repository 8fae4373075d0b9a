-- The statements psql 15.18 (Debian 15.18-0+deb12u1) sends for its tab
-- completion (readline, in a terminal) of relation names (SELECT * FROM <tab>,
-- \dv <tab>, after the prefix t), of names in a schema (\d public.<tab>) and of
-- column names (SELECT * FROM t WHERE <tab>, after the prefix i), recorded from a
-- PostgreSQL 15 server run with -c log_statement=all over the tables of
-- describe_table.sql. "-- answer:" lines name the catalog answer of the
-- statement after them (pgwire/catalog.go); the literals are its arguments.
-- answer: psql_complete_relations
SELECT c.relname, NULL::pg_catalog.text FROM pg_catalog.pg_class c WHERE c.relkind IN ('r', 'S', 'v', 'm', 'f', 'p') AND (c.relname) LIKE 't%' AND pg_catalog.pg_table_is_visible(c.oid) AND c.relnamespace <> (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = 'pg_catalog')
UNION ALL
SELECT NULL::pg_catalog.text, n.nspname FROM pg_catalog.pg_namespace n WHERE n.nspname LIKE 't%' AND n.nspname NOT LIKE E'pg\\_%'
LIMIT 1000
-- answer: psql_complete_columns
SELECT a.attname, NULL::pg_catalog.text FROM pg_catalog.pg_attribute a, pg_catalog.pg_class c WHERE c.oid = a.attrelid and a.attnum > 0 and not a.attisdropped AND (a.attname) LIKE '%' AND c.relname = 't' AND pg_catalog.pg_table_is_visible(c.oid)
LIMIT 1000
-- answer: psql_complete_schema_relations
SELECT c.relname, n.nspname FROM pg_catalog.pg_class c, pg_catalog.pg_namespace n WHERE c.relnamespace = n.oid AND (c.relname) LIKE '%' AND n.nspname = 'public'
LIMIT 1000
-- answer: psql_complete_relations
SELECT c.relname, NULL::pg_catalog.text FROM pg_catalog.pg_class c WHERE c.relkind IN ('v') AND (c.relname) LIKE '%' AND pg_catalog.pg_table_is_visible(c.oid) AND c.relnamespace <> (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = 'pg_catalog')
UNION ALL
SELECT NULL::pg_catalog.text, n.nspname FROM pg_catalog.pg_namespace n WHERE n.nspname LIKE '%' AND n.nspname NOT LIKE E'pg\\_%'
LIMIT 1000
-- answer: psql_complete_relations
SELECT c.relname, NULL::pg_catalog.text FROM pg_catalog.pg_class c WHERE c.relkind IN ('r', 'S', 'v', 'm', 'f', 'p') AND (c.relname) LIKE '%' AND pg_catalog.pg_table_is_visible(c.oid) AND c.relnamespace <> (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = 'pg_catalog')
UNION ALL
SELECT NULL::pg_catalog.text, n.nspname FROM pg_catalog.pg_namespace n WHERE n.nspname LIKE '%' AND n.nspname NOT LIKE E'pg\\_%'
LIMIT 1000
-- answer: psql_complete_columns
SELECT a.attname, NULL::pg_catalog.text FROM pg_catalog.pg_attribute a, pg_catalog.pg_class c WHERE c.oid = a.attrelid and a.attnum > 0 and not a.attisdropped AND (a.attname) LIKE 'i%' AND c.relname = 't' AND pg_catalog.pg_table_is_visible(c.oid)
LIMIT 1000
