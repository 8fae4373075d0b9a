-- The query of a Grafana time series panel over a streamsql view, as its
-- PostgreSQL data source's code editor holds it (the form Grafana's
-- documentation gives: "time" and "metric" columns, $__timeFilter on the
-- time column, ORDER BY 1). Grafana's backend expands $__timeFilter(col)
-- to col BETWEEN '<from>' AND '<to>' with the panel's range in RFC 3339
-- UTC (pkg/tsdb/grafana-postgresql-datasource/macros.go; the editor's
-- help: time BETWEEN '2017-07-18T11:15:52Z' AND '2017-07-18T11:15:52Z')
-- and sends the text without parameters. TestGrafanaTimeSeries expands it
-- the same way.
SELECT
  window_start AS "time",
  channel AS metric,
  bids
FROM gv
WHERE
  $__timeFilter(window_start)
ORDER BY 1
