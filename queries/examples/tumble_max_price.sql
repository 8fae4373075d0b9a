-- Highest bid per 10 s tumbling window (the inner part of Nexmark q7).
SELECT window_start, window_end, MAX(price) AS maxprice, COUNT(*) AS bids FROM bid GROUP BY TUMBLE(date_time, '10s')
