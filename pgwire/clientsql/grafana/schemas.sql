-- The statements Grafana's PostgreSQL data source sends for the schema picker, as
-- public/app/plugins/datasource/grafana-postgresql-datasource/postgresMetaQuery.ts
-- of grafana/grafana (plugin version 12.2.0-pre, commit 12f912ab8d01) builds them:
-- showSchemas().
-- "-- answer:" lines name the catalog answer of the statement after them
-- (pgwire/catalog.go); the literals are its arguments.
-- answer: grafana_schemas
SELECT schema_name AS "name"
    FROM information_schema.schemata
    WHERE schema_name NOT IN ('information_schema',
                              'pg_catalog',
                              'pg_toast',
                              '_timescaledb_cache',
                              '_timescaledb_catalog',
                              '_timescaledb_internal',
                              '_timescaledb_config',
                              'timescaledb_information',
                              'timescaledb_experimental')
    ORDER BY schema_name;
