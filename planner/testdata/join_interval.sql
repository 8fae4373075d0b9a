SELECT /*+ SET_VAR(parallelism=2) */ b.auction, b.price, a.seller, a.name
FROM bids b JOIN auctions a ON b.auction = a.id AND b.ts BETWEEN a.ts AND a.ts + INTERVAL 10 SECOND AND b.price > a.category
