-- Nexmark q5, hot items: the auctions with the most bids in each 10 s window sliding every 2 s.
SELECT ab.auction, ab.num, ab.window_start, ab.window_end
FROM (SELECT auction, COUNT(*) AS num, window_start, window_end
      FROM bid GROUP BY HOP(date_time, '2s', '10s'), auction) ab
JOIN (SELECT MAX(num) AS maxn, window_start, window_end
      FROM (SELECT COUNT(*) AS num, window_start, window_end
            FROM bid GROUP BY HOP(date_time, '2s', '10s'), auction) cb
      GROUP BY window_start, window_end) mb
ON ab.window_start = mb.window_start AND ab.window_end = mb.window_end AND ab.num >= mb.maxn
