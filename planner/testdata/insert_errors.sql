INSERT INTO pg_counts SELECT window_start, window_end, bidder, COUNT(*), AVG(price) FROM bids GROUP BY TUMBLE(ts, '10s'), auction, bidder;
INSERT INTO pg_counts SELECT window_start, window_end, auction, bidder, AVG(price) FROM bids GROUP BY TUMBLE(ts, '10s'), auction, bidder;
INSERT INTO pg_counts SELECT window_start, window_end, auction, COUNT(*) FROM bids GROUP BY TUMBLE(ts, '10s'), auction;
INSERT INTO pg_counts SELECT window_start, window_end, auction, channel, AVG(price) FROM bids GROUP BY TUMBLE(ts, '10s'), auction, channel;
INSERT INTO pg_counts SELECT window_start, window_start, auction, COUNT(*), AVG(price) FROM bids GROUP BY TUMBLE(ts, '10s'), auction;
INSERT INTO pg_channels SELECT channel, price FROM bids;
INSERT INTO pg_pairs SELECT auction, COUNT(*) FROM bids GROUP BY auction;
INSERT INTO bids SELECT auction, bidder, price, channel, ts FROM bids;
INSERT INTO pg_channels SELECT /*+ SET_VAR(checkpoint_interval='0s') */ channel, SUM(price) FROM bids GROUP BY channel;
INSERT INTO pg_counts SELECT /*+ SET_VAR(checkpoint_interval='0s') */ window_start, window_end, auction, COUNT(*), AVG(price) FROM bids GROUP BY TUMBLE(ts, '10s'), auction;
SELECT * FROM pg_counts
