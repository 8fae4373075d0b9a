-- The statements the legacy query editor of Grafana's PostgreSQL data source
-- (Grafana 8's visual editor, still served to old dashboards) sends, as
-- public/app/plugins/datasource/postgres/meta_query.ts of grafana/grafana
-- (commit 027e669f230f) builds them, for the table t (or public.t), its time
-- column ts: buildTableQuery, buildColumnQuery (no type, time, metric, value,
-- group), buildDatatypeQuery, findMetricTable and buildAggregateQuery.
-- "-- answer:" lines name the catalog answer of the statement after them
-- (pgwire/catalog.go); the literals are its arguments.
-- answer: grafana_legacy_tables
SELECT quote_ident(table_name) FROM information_schema.tables WHERE 
table_schema IN (
  SELECT
    CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
  FROM
    generate_series(
      array_lower(string_to_array(current_setting('search_path'),','),1),
      array_upper(string_to_array(current_setting('search_path'),','),1)
    ) as i,
    string_to_array(current_setting('search_path'),',') s
) ORDER BY table_name;
-- answer: grafana_legacy_columns
SELECT quote_ident(column_name) FROM information_schema.columns WHERE 
table_schema IN (
  SELECT
    CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
  FROM
    generate_series(
      array_lower(string_to_array(current_setting('search_path'),','),1),
      array_upper(string_to_array(current_setting('search_path'),','),1)
    ) as i,
    string_to_array(current_setting('search_path'),',') s
) AND table_name = 't' ORDER BY column_name;
-- answer: grafana_legacy_columns
SELECT quote_ident(column_name) FROM information_schema.columns WHERE 
table_schema IN (
  SELECT
    CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
  FROM
    generate_series(
      array_lower(string_to_array(current_setting('search_path'),','),1),
      array_upper(string_to_array(current_setting('search_path'),','),1)
    ) as i,
    string_to_array(current_setting('search_path'),',') s
) AND table_name = 't' AND data_type IN ('timestamp without time zone','timestamp with time zone','bigint','integer','double precision','real') ORDER BY column_name;
-- answer: grafana_legacy_columns
SELECT quote_ident(column_name) FROM information_schema.columns WHERE 
table_schema IN (
  SELECT
    CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
  FROM
    generate_series(
      array_lower(string_to_array(current_setting('search_path'),','),1),
      array_upper(string_to_array(current_setting('search_path'),','),1)
    ) as i,
    string_to_array(current_setting('search_path'),',') s
) AND table_name = 't' AND data_type IN ('text','character','character varying') ORDER BY column_name;
-- answer: grafana_legacy_columns
SELECT quote_ident(column_name) FROM information_schema.columns WHERE table_schema = 'public' AND table_name = 't' AND data_type IN ('bigint','integer','double precision','real','numeric') AND column_name <> 'ts' ORDER BY column_name;
-- answer: grafana_legacy_columns
SELECT quote_ident(column_name) FROM information_schema.columns WHERE table_schema = 'public' AND table_name = 't' AND data_type IN ('text','character','character varying','uuid') ORDER BY column_name;
-- answer: grafana_legacy_datatype
SELECT udt_name FROM information_schema.columns WHERE 
table_schema IN (
  SELECT
    CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
  FROM
    generate_series(
      array_lower(string_to_array(current_setting('search_path'),','),1),
      array_upper(string_to_array(current_setting('search_path'),','),1)
    ) as i,
    string_to_array(current_setting('search_path'),',') s
) AND table_name = 't' AND column_name = 'd';
-- answer: grafana_legacy_datatype
SELECT udt_name FROM information_schema.columns WHERE table_schema = 'public' AND table_name = 't' AND column_name = 'ts';
-- answer: grafana_metric_table
SELECT
	quote_ident(table_name) as table_name,
	( SELECT
	    quote_ident(column_name) as column_name
	  FROM information_schema.columns c
    WHERE
      c.table_schema = t.table_schema AND
      c.table_name = t.table_name AND
      udt_name IN ('timestamptz','timestamp')
    ORDER BY ordinal_position LIMIT 1
  ) AS time_column,
  ( SELECT
      quote_ident(column_name) AS column_name
    FROM information_schema.columns c
    WHERE
      c.table_schema = t.table_schema AND
      c.table_name = t.table_name AND
      udt_name='float8'
    ORDER BY ordinal_position LIMIT 1
  ) AS value_column
FROM information_schema.tables t
WHERE 
table_schema IN (
  SELECT
    CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
  FROM
    generate_series(
      array_lower(string_to_array(current_setting('search_path'),','),1),
      array_upper(string_to_array(current_setting('search_path'),','),1)
    ) as i,
    string_to_array(current_setting('search_path'),',') s
) AND
  EXISTS
  ( SELECT 1
    FROM information_schema.columns c
    WHERE
      c.table_schema = t.table_schema AND
      c.table_name = t.table_name AND
      udt_name IN ('timestamptz','timestamp')
  ) AND
  EXISTS
  ( SELECT 1
    FROM information_schema.columns c
    WHERE
      c.table_schema = t.table_schema AND
      c.table_name = t.table_name AND
      udt_name='float8'
  )
LIMIT 1
;
-- answer: grafana_aggregates
SELECT DISTINCT proname FROM pg_aggregate INNER JOIN pg_proc ON pg_aggregate.aggfnoid = pg_proc.oid INNER JOIN pg_type ON pg_type.oid=pg_proc.prorettype WHERE pronargs=1 AND typname IN ('float8') AND aggkind='n' ORDER BY 1;
