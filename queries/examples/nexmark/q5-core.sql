-- Nexmark q5-core: bids per auction over a 10 s window sliding every 2 s (the HOP count of q5 alone).
SELECT auction, COUNT(*) AS num, window_start, window_end FROM bid GROUP BY HOP(date_time, '2s', '10s'), auction
