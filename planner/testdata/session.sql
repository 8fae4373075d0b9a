SELECT window_start, window_end, bidder, MIN(price) AS lo, MAX(price) AS hi, SUM(CASE WHEN price > 500 THEN 1 ELSE 0 END) AS big
FROM bids GROUP BY SESSION_WINDOW(ts, '30s'), bidder
