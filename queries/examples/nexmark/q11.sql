-- Nexmark q11, user sessions: bids per bidder per session, a session ending
-- after 10 s without a bid.
SELECT bidder, COUNT(*) AS bid_count, window_start, window_end
FROM bid GROUP BY SESSION_WINDOW(date_time, '10s'), bidder
