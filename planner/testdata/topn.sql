SELECT auction, price, rn FROM (SELECT auction, price, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) AS rn FROM bids) t WHERE rn <= 3;
SELECT /*+ SET_VAR(parallelism=2) */ * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder, auction ORDER BY ts DESC) AS r FROM bids) t WHERE r = 1;
SELECT /*+ SET_VAR(parallelism=2) SET_VAR(state_ttl='1h') */ auction, bidder, ts FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY ts) AS r FROM bids) t WHERE r = 1;
SELECT window_start, auction, n FROM (SELECT *, RANK() OVER (PARTITION BY window_start, window_end ORDER BY n DESC) AS r FROM bids_per_10s) t WHERE r < 4;
WITH totals AS (SELECT channel, bidder, SUM(price) AS total FROM bids GROUP BY channel, bidder),
     ranked AS (SELECT channel, bidder, total, DENSE_RANK() OVER (PARTITION BY channel ORDER BY total DESC) AS dr FROM totals)
SELECT channel, COUNT(*) AS top_bidders FROM ranked WHERE dr <= 2 GROUP BY channel;
INSERT INTO pg_channels SELECT channel, price AS volume FROM (SELECT channel, price, ROW_NUMBER() OVER (PARTITION BY channel ORDER BY price DESC) AS rn FROM bids) t WHERE rn = 1
