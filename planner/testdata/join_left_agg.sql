SELECT window_start, a.seller, COUNT(*) AS bids, COUNT(b.bidder) AS matched
FROM auctions a LEFT JOIN bids b ON a.id = b.auction AND b.ts >= a.ts AND b.ts < a.ts + INTERVAL 1 MINUTE
GROUP BY TUMBLE(a.ts, '1m'), a.seller
