-- Nexmark q17, auction statistics (per 10 s tumbling window instead of per day).
SELECT auction, window_start, COUNT(*) AS total_bids,
       SUM(CASE WHEN price < 10000 THEN 1 ELSE 0 END) AS rank1_bids,
       SUM(CASE WHEN price >= 10000 AND price < 1000000 THEN 1 ELSE 0 END) AS rank2_bids,
       SUM(CASE WHEN price >= 1000000 THEN 1 ELSE 0 END) AS rank3_bids,
       MIN(price) AS min_price, MAX(price) AS max_price, AVG(price) AS avg_price, SUM(price) AS sum_price
FROM bid GROUP BY TUMBLE(date_time, '10s'), auction
