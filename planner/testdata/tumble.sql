SELECT window_start, window_end, auction, COUNT(*) AS bids, SUM(price) AS volume FROM bids GROUP BY TUMBLE(ts, '10s'), auction
