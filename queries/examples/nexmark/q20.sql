-- Nexmark q20, expand bid with auction: bids joined with their auction, category 10 only
-- (a regular join; state ages out 1 h of event time after each row).
SELECT /*+ SET_VAR(state_ttl='1h') */ b.auction, b.bidder, b.price, b.channel, b.url, b.date_time AS bid_time,
       a.item_name, a.description, a.initial_bid, a.reserve, a.date_time AS auction_time, a.expires, a.seller, a.category
FROM bid b JOIN auction a ON b.auction = a.id
WHERE a.category = 10
