SELECT /*+ SET_VAR(state_ttl='1h') */ b.auction, a.seller FROM bids b JOIN auctions a ON b.auction = a.id;
SELECT b.auction, a.seller FROM bids b JOIN auctions a ON b.auction = a.id;
SELECT /*+ SET_VAR(state_ttl='1h') */ b.auction, c.url FROM bids b JOIN clicks c ON b.channel = c.url;
-- WHERE conditions on one side filter it before the join (not in a LEFT join)
SELECT /*+ SET_VAR(state_ttl='1h') */ b.auction, a.seller FROM bids b JOIN auctions a ON b.auction = a.id WHERE a.category = 10 AND b.price > 100 AND (b.channel = 'x' OR a.name = 'y') AND b.bidder < a.seller;
SELECT /*+ SET_VAR(state_ttl='1h') */ b.auction, a.seller FROM bids b LEFT JOIN auctions a ON b.auction = a.id WHERE a.category = 10 AND b.price > 100;
-- a time bound on one side only: state_ttl bounds the other
SELECT /*+ SET_VAR(state_ttl='1h') */ b.auction, a.seller FROM bids b JOIN auctions a ON b.auction = a.id AND b.ts >= a.ts;
SELECT /*+ SET_VAR(state_ttl='1h') */ b.auction, a.seller FROM bids b LEFT JOIN auctions a ON b.auction = a.id AND b.ts <= a.ts + INTERVAL 10 SECOND
