SELECT /*+ SET_VAR(parallelism=2) */ p.window_start, p.auction, p.n, s.sellers
FROM (SELECT window_start, window_end, auction, COUNT(*) AS n FROM bids GROUP BY TUMBLE(ts, '10s'), auction) p
JOIN (SELECT window_start, window_end, id, COUNT(DISTINCT seller) AS sellers FROM auctions GROUP BY TUMBLE(ts, '10s'), id) s
  ON p.auction = s.id AND p.window_end = s.window_end
