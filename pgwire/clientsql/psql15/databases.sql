-- The statements psql 15.18 (Debian 15.18-0+deb12u1) sends for `\l`, recorded
-- from a PostgreSQL 15 server run with -c log_statement=all over
--   CREATE TABLE t (id bigint PRIMARY KEY, d double precision, s varchar(64), b boolean, ts timestamp(3));
--   CREATE VIEW v AS SELECT id, d, s FROM t;
-- (t had the OID 16384, v 16389). "-- answer: x" names the catalog answer of the
-- statement after it (pgwire/catalog.go); the literals are its arguments.
-- answer: databases
SELECT d.datname as "Name",
       pg_catalog.pg_get_userbyid(d.datdba) as "Owner",
       pg_catalog.pg_encoding_to_char(d.encoding) as "Encoding",
       d.datcollate as "Collate",
       d.datctype as "Ctype",
       d.daticulocale as "ICU Locale",
       CASE d.datlocprovider WHEN 'c' THEN 'libc' WHEN 'i' THEN 'icu' END AS "Locale Provider",
       pg_catalog.array_to_string(d.datacl, E'\n') AS "Access privileges"
FROM pg_catalog.pg_database d
ORDER BY 1;
