SELECT * FROM bids b JOIN auctions a ON b.price > a.category AND b.ts BETWEEN a.ts AND a.ts + INTERVAL 1 SECOND;
SELECT * FROM bids b JOIN auctions a ON b.auction = a.id;
SELECT * FROM bids b JOIN auctions a ON b.channel = a.id AND b.ts BETWEEN a.ts AND a.ts + INTERVAL 1 SECOND;
SELECT * FROM bids b JOIN auctions a AS OF TIMESTAMP b.ts ON b.auction = a.id;
SELECT auction FROM bids b JOIN auctions a ON b.auction = a.id AND b.ts BETWEEN a.ts AND a.ts + INTERVAL 1 SECOND;
SELECT id, bogus.x FROM bids b JOIN auctions a ON b.auction = a.id AND b.ts BETWEEN a.ts AND a.ts + INTERVAL 1 SECOND
