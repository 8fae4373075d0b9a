SELECT b.auction, b.price, b.bidder
FROM bids b JOIN (SELECT MAX(price) AS maxprice, window_end FROM bids GROUP BY TUMBLE(ts, '10s')) m
  ON b.price = m.maxprice
WHERE b.ts >= m.window_end - INTERVAL 10 SECOND AND b.ts < m.window_end
