-- Nexmark q7, highest bid: the bids with the highest price in each 10 s window.
SELECT b.auction, b.price, b.bidder, b.date_time
FROM bid b
JOIN (SELECT MAX(price) AS maxprice, window_end FROM bid GROUP BY TUMBLE(date_time, '10s')) m
  ON b.price = m.maxprice
WHERE b.date_time >= m.window_end - INTERVAL 10 SECOND AND b.date_time < m.window_end
