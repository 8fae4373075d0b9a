-- Per-channel statistics per minute: every aggregate function.
SELECT window_start, channel, COUNT(*) AS bids, COUNT(DISTINCT bidder) AS bidders, SUM(price) AS volume,
       AVG(price) AS avg_price, MIN(price) AS min_price, MAX(price) AS max_price
FROM bid GROUP BY TUMBLE(date_time, '1m'), channel
