-- The statements Grafana's PostgreSQL data source sends for its version checks (the configuration page and the query editor), as
-- public/app/plugins/datasource/grafana-postgresql-datasource/postgresMetaQuery.ts
-- of grafana/grafana (plugin version 12.2.0-pre, commit 12f912ab8d01) builds them:
-- getVersion() and getTimescaleDBVersion().
-- "-- answer:" lines name the catalog answer of the statement after them
-- (pgwire/catalog.go); the literals are its arguments.
-- answer: grafana_version
SELECT current_setting('server_version_num')::int/100 as version;
-- answer: grafana_timescaledb
SELECT extversion FROM pg_extension WHERE extname = 'timescaledb';
