SELECT window_start, SUM(n) AS bids FROM bids_per_10s GROUP BY window_start, window_end
