-- Nexmark q9, winning bids: the highest bid of each auction while it is
-- open (the earliest of equal bids), with its auction. A Top-1 per auction
-- over a join (its state ages out 1 h of event time after each row, as
-- q4's): an updating result keyed on the auction.
SELECT /*+ SET_VAR(state_ttl='1h') */ id, item_name, description, initial_bid, reserve, date_time, expires, seller, category, extra,
       auction, bidder, price, bid_date_time, bid_extra
FROM (
  SELECT a.*, b.auction, b.bidder, b.price, b.date_time AS bid_date_time, b.extra AS bid_extra,
         ROW_NUMBER() OVER (PARTITION BY a.id ORDER BY b.price DESC, b.date_time ASC) AS rownum
  FROM auction a, bid b
  WHERE a.id = b.auction AND b.date_time BETWEEN a.date_time AND a.expires
) t
WHERE rownum <= 1
