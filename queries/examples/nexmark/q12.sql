-- Nexmark q12, processing-time windows: bids per bidder per 10 s of wall-clock time.
SELECT bidder, COUNT(*) AS bid_count, window_start, window_end
FROM bid GROUP BY TUMBLE(PROCTIME(), '10s'), bidder
