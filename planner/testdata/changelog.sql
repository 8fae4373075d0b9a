SELECT n, COUNT(*) AS channels, MIN(lo) AS lo, MAX(hi) AS hi, COUNT(DISTINCT d) AS dd FROM (SELECT channel, COUNT(*) AS n, MIN(price) AS lo, MAX(price) AS hi, COUNT(DISTINCT bidder) AS d FROM bids GROUP BY channel) r GROUP BY n;
SELECT n, SUM(v) AS volume FROM (SELECT channel, COUNT(*) AS n, SUM(price) AS v FROM bids GROUP BY channel) r GROUP BY n HAVING COUNT(*) > 1;
SELECT channel, v FROM (SELECT channel, SUM(price) AS v FROM bids GROUP BY channel) r WHERE v > 0;
SELECT /*+ SET_VAR(parallelism=2) */ n, COUNT(*) AS auctions FROM (SELECT auction, COUNT(*) AS n FROM bids GROUP BY auction) r GROUP BY n;
SELECT /*+ SET_VAR(parallelism=2) */ channel, COUNT(*) AS bidders FROM (SELECT channel, bidder, COUNT(*) AS n FROM bids GROUP BY channel, bidder) r WHERE n > 1 GROUP BY channel;
SELECT c, COUNT(*) AS n FROM (SELECT n AS c, COUNT(*) AS k FROM (SELECT auction, COUNT(*) AS n FROM bids GROUP BY auction) a GROUP BY n) b GROUP BY c;
SELECT id, name FROM persons WHERE state = 'CA';
SELECT /*+ SET_VAR(parallelism=2) */ state, COUNT(*) AS people, MAX(name) AS last_name FROM persons GROUP BY state;
SELECT window_start, window_end, state, COUNT(*) AS people FROM persons GROUP BY TUMBLE(ts, '10s'), state;
SELECT /*+ SET_VAR(emit_mode=on_window_close) */ window_start, window_end, COUNT(*) AS people FROM persons GROUP BY TUMBLE(ts, '10s')
