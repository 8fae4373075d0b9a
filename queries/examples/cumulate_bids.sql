-- Bids per auction so far in each 10 s window, every 2 s: CUMULATE's
-- windows [s, s+2s), [s, s+4s) ... [s, s+10s) share one state per auction
-- and 10 s window (compare tumble_bids.sql, the 10 s windows alone).
SELECT window_start, window_end, auction, COUNT(*) AS bids, SUM(price) AS volume, MAX(price) AS top
FROM bid GROUP BY CUMULATE(date_time, '2s', '10s'), auction
