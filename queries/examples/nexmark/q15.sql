-- Nexmark q15, bidding statistics report: per day, bids and distinct bidders
-- and auctions in three price bands (a running aggregation).
SELECT DATE_FORMAT(date_time, '%Y-%m-%d') AS day,
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
GROUP BY DATE_FORMAT(date_time, '%Y-%m-%d')
