SELECT /*+ SET_VAR(delivery='at_most_once') SET_VAR(parallelism=2) */ auction, price FROM bids;
SELECT /*+ SET_VAR(delivery='AT_MOST_ONCE') */ auction, COUNT(*) AS n FROM bids GROUP BY auction;
SELECT /*+ SET_VAR(delivery='exactly_once') */ auction, COUNT(*) AS n FROM bids GROUP BY auction;
SELECT /*+ SET_VAR(delivery='at_most_once') */ window_start, SUM(n) AS bids FROM bids_per_10s GROUP BY window_start, window_end;
SELECT /*+ SET_VAR(delivery='at_least_once') */ auction, price FROM bids;
SELECT /*+ SET_VAR(delivery='at_most_onse') */ auction, price FROM bids;
SELECT /*+ SET_VAR(delivery='none') */ auction, price FROM bids;
SELECT x.auction FROM (SELECT /*+ SET_VAR(delivery='at_most_once') */ auction FROM bids) x;
INSERT INTO pg_channels SELECT /*+ SET_VAR(delivery='at_most_once') */ channel, SUM(price) FROM bids GROUP BY channel;
INSERT INTO pg_counts SELECT /*+ SET_VAR(delivery='exactly_once') */ window_start, window_end, auction, COUNT(*), AVG(price) FROM bids GROUP BY TUMBLE(ts, '10s'), auction;
INSERT INTO fs_bids SELECT /*+ SET_VAR(delivery='at_most_once') */ auction, price, ts, DATE_FORMAT(ts, '%Y-%m-%d') FROM bids;
EXPLAIN CREATE VIEW v AS SELECT /*+ SET_VAR(delivery='at_most_once') */ auction, price FROM bids
