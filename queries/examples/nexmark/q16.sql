-- Nexmark q16, channel statistics report: q15 per channel and day, with the
-- last minute of the day a bid came in.
SELECT channel, DATE_FORMAT(date_time, '%Y-%m-%d') AS day,
       MAX(DATE_FORMAT(date_time, '%H:%i')) AS minute,
       COUNT(*) AS total_bids,
       SUM(CASE WHEN price < 10000 THEN 1 ELSE 0 END) AS rank1_bids,
       SUM(CASE WHEN price >= 10000 AND price < 1000000 THEN 1 ELSE 0 END) AS rank2_bids,
       SUM(CASE WHEN price >= 1000000 THEN 1 ELSE 0 END) AS rank3_bids,
       COUNT(DISTINCT bidder) AS total_bidders,
       COUNT(DISTINCT IF(price < 10000, bidder, NULL)) AS rank1_bidders,
       COUNT(DISTINCT IF(price >= 10000 AND price < 1000000, bidder, NULL)) AS rank2_bidders,
       COUNT(DISTINCT IF(price >= 1000000, bidder, NULL)) AS rank3_bidders,
       COUNT(DISTINCT auction) AS total_auctions,
       COUNT(DISTINCT IF(price < 10000, auction, NULL)) AS rank1_auctions,
       COUNT(DISTINCT IF(price >= 10000 AND price < 1000000, auction, NULL)) AS rank2_auctions,
       COUNT(DISTINCT IF(price >= 1000000, auction, NULL)) AS rank3_auctions
FROM bid
GROUP BY channel, DATE_FORMAT(date_time, '%Y-%m-%d')
