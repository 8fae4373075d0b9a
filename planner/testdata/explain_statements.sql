EXPLAIN SELECT auction, COUNT(*) AS n FROM bids GROUP BY auction;
EXPLAIN CREATE VIEW per_channel AS SELECT /*+ SET_VAR(parallelism=2) */ window_start, window_end, channel, COUNT(*) AS n FROM bids GROUP BY TUMBLE(ts, '10s'), channel;
EXPLAIN CREATE OR REPLACE VIEW totals AS SELECT window_start, SUM(n) AS bids FROM bids_per_10s GROUP BY window_start, window_end;
EXPLAIN INSERT INTO pg_channels SELECT channel, SUM(price) FROM bids GROUP BY channel;
EXPLAIN SELECT window_start, auction, n FROM bids_per_10s WHERE n > 2 ORDER BY 3 DESC, auction LIMIT 5;
EXPLAIN SELECT window_start, SUM(n) AS bids FROM bids_per_10s GROUP BY window_start, window_end;
EXPLAIN INSERT INTO nosuch SELECT auction FROM bids;
EXPLAIN INSERT INTO pg_channels SELECT channel FROM bids GROUP BY channel
