-- The statements psql 15.18 (Debian 15.18-0+deb12u1) sends for `\dn`, recorded
-- from a PostgreSQL 15 server run with -c log_statement=all over
--   CREATE TABLE t (id bigint PRIMARY KEY, d double precision, s varchar(64), b boolean, ts timestamp(3));
--   CREATE VIEW v AS SELECT id, d, s FROM t;
-- (t had the OID 16384, v 16389). "-- answer: x" names the catalog answer of the
-- statement after it (pgwire/catalog.go); the literals are its arguments.
-- answer: schemas
SELECT n.nspname AS "Name",
  pg_catalog.pg_get_userbyid(n.nspowner) AS "Owner"
FROM pg_catalog.pg_namespace n
WHERE n.nspname !~ '^pg_' AND n.nspname <> 'information_schema'
ORDER BY 1;
