-- Nexmark q18, find last bid: the last bid of each bidder on each auction
-- (deduplication keeping the last row by event time: an updating result
-- keyed on bidder and auction).
SELECT auction, bidder, price, channel, url, date_time, extra
FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder, auction ORDER BY date_time DESC) AS rank_number
      FROM bid) t
WHERE rank_number <= 1
