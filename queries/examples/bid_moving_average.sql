-- Each bid with its auction's moving average and highest price over the
-- bid and the 10 before it (an OVER aggregation: each bid is emitted once
-- the watermark passes it).
SELECT auction, bidder, price, date_time,
       AVG(price) OVER (PARTITION BY auction ORDER BY date_time ROWS BETWEEN 10 PRECEDING AND CURRENT ROW) AS avg_price,
       MAX(price) OVER (PARTITION BY auction ORDER BY date_time ROWS BETWEEN 10 PRECEDING AND CURRENT ROW) AS max_price
FROM bid
