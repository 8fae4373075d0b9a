-- Bids per auction in each 10 s window: the last of cumulate_bids.sql's
-- windows alone (the baseline of its benchmark).
SELECT window_start, window_end, auction, COUNT(*) AS bids, SUM(price) AS volume, MAX(price) AS top
FROM bid GROUP BY TUMBLE(date_time, '10s'), auction
