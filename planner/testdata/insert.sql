INSERT INTO pg_counts SELECT window_start, window_end, auction, COUNT(*), AVG(price) FROM bids GROUP BY TUMBLE(ts, '10s'), auction;
INSERT INTO pg_counts SELECT /*+ SET_VAR(parallelism=2) */ window_start, window_end, auction, COUNT(*), SUM(price) FROM bids GROUP BY HOP(ts, '2s', '10s'), auction HAVING COUNT(*) > 1;
INSERT INTO pg_channels SELECT channel, SUM(price) FROM bids GROUP BY channel;
INSERT INTO pg_pairs SELECT b.auction, a.seller FROM bids b JOIN auctions a ON b.auction = a.id AND b.ts BETWEEN a.ts AND a.ts + INTERVAL 10 SECOND
