-- The statements Grafana's PostgreSQL data source sends for the SQL builder's column pickers (fetchFields), as
-- public/app/plugins/datasource/grafana-postgresql-datasource/postgresMetaQuery.ts
-- of grafana/grafana (plugin version 12.2.0-pre, commit 12f912ab8d01) builds them:
-- getSchema(table) for the tables t and public.t.
-- "-- answer:" lines name the catalog answer of the statement after them
-- (pgwire/catalog.go); the literals are its arguments.
-- answer: grafana_columns
SELECT quote_ident(column_name) AS "column", data_type AS "type"
    FROM information_schema.columns
    WHERE
      CASE WHEN array_length(parse_ident('t'),1) = 2
        THEN quote_ident(table_schema) = (parse_ident('t'))[1]
          AND quote_ident(table_name) = (parse_ident('t'))[2]
        ELSE quote_ident(table_name) = 't'
          AND 
          quote_ident(table_schema) IN (
          SELECT
            CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
          FROM
            generate_series(
              array_lower(string_to_array(current_setting('search_path'),','),1),
              array_upper(string_to_array(current_setting('search_path'),','),1)
            ) as i,
            string_to_array(current_setting('search_path'),',') s
          )
      END;
-- answer: grafana_columns
SELECT quote_ident(column_name) AS "column", data_type AS "type"
    FROM information_schema.columns
    WHERE
      CASE WHEN array_length(parse_ident('public.t'),1) = 2
        THEN quote_ident(table_schema) = (parse_ident('public.t'))[1]
          AND quote_ident(table_name) = (parse_ident('public.t'))[2]
        ELSE quote_ident(table_name) = 'public.t'
          AND 
          quote_ident(table_schema) IN (
          SELECT
            CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
          FROM
            generate_series(
              array_lower(string_to_array(current_setting('search_path'),','),1),
              array_upper(string_to_array(current_setting('search_path'),','),1)
            ) as i,
            string_to_array(current_setting('search_path'),',') s
          )
      END;
