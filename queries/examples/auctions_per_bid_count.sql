-- Bids per auction, then auctions per bid count: an aggregation over a
-- running aggregate. Each bid moves its auction from one count to the next
-- (the inner aggregation's update: the old row taken back, the new one
-- added), and MIN/MAX over the auctions' top prices find the next extreme
-- when the current one leaves its count.
SELECT bids, COUNT(*) AS auctions, SUM(top) AS sum_top, MIN(top) AS min_top, MAX(top) AS max_top
FROM (SELECT auction, COUNT(*) AS bids, MAX(price) AS top FROM bid GROUP BY auction) AS a
GROUP BY bids
