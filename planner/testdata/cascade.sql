SELECT window_start, window_end, MAX(n) AS hottest, COUNT(*) AS auctions
FROM (SELECT window_start, window_end, auction, COUNT(*) AS n FROM bids GROUP BY HOP(ts, '2s', '10s'), auction) c
GROUP BY window_start, window_end
