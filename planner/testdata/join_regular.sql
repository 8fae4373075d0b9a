SELECT /*+ SET_VAR(state_ttl='1h') */ b.auction, a.seller FROM bids b JOIN auctions a ON b.auction = a.id;
SELECT b.auction, a.seller FROM bids b JOIN auctions a ON b.auction = a.id;
SELECT /*+ SET_VAR(state_ttl='1h') */ b.auction, c.url FROM bids b JOIN clicks c ON b.channel = c.url
