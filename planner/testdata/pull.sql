EXPLAIN SELECT auction, SUM(n) AS bids, COUNT(*) AS windows FROM bids_per_10s GROUP BY auction HAVING bids > 3 ORDER BY bids DESC, 1 LIMIT 10;
EXPLAIN SELECT /*+ SET_VAR(consistency='latest') */ auction % 10 AS bucket, AVG(n), MAX(n), COUNT(DISTINCT auction) FROM bids_per_10s WHERE window_start >= '2026-12-03T09:00:00Z' GROUP BY bucket ORDER BY MIN(n);
EXPLAIN SELECT COUNT(*), SUM(n) FROM bids_per_10s;
EXPLAIN SELECT DISTINCT auction FROM bids_per_10s ORDER BY auction;
EXPLAIN SELECT window_start AS "time", auction AS metric, n FROM bids_per_10s WHERE window_start BETWEEN '2026-12-03T09:00:00Z' AND '2026-12-03T10:00:00Z' ORDER BY 1;
EXPLAIN SELECT auction, n FROM bids_per_10s GROUP BY auction;
EXPLAIN SELECT auction, SUM(n) FROM bids_per_10s GROUP BY 3;
EXPLAIN SELECT SUM(n) AS s FROM bids_per_10s GROUP BY s;
EXPLAIN SELECT auction FROM bids_per_10s WHERE SUM(n) > 1;
EXPLAIN SELECT DISTINCT auction, COUNT(*) FROM bids_per_10s GROUP BY auction;
EXPLAIN SELECT DISTINCT auction FROM bids_per_10s ORDER BY n;
EXPLAIN SELECT window_start, COUNT(*) FROM bids_per_10s GROUP BY TUMBLE(window_start, '1m');
EXPLAIN SELECT auction FROM bids_per_10s WHERE window_start > 'yesterday';
EXPLAIN SELECT auction FROM bids_per_10s WHERE window_start IN ('2026-12-03T09:00:00Z', 'soon');
EXPLAIN SELECT /*+ SET_VAR(consistency='newest') */ auction FROM bids_per_10s;
EXPLAIN SELECT /*+ SET_VAR(parallelism=2) */ auction FROM bids_per_10s;
EXPLAIN SELECT auction, SUM(n) FROM bids_per_10s GROUP BY auction ORDER BY 3;
EXPLAIN SELECT auction, GROUP_CONCAT(n ORDER BY n DESC) FROM bids_per_10s GROUP BY auction;
EXPLAIN CREATE VIEW c AS SELECT /*+ SET_VAR(consistency='latest') */ auction, COUNT(*) FROM bids GROUP BY auction
