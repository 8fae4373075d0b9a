SELECT p.name FROM persons p JOIN bids b ON b.bidder = p.id;
SELECT b.auction FROM bids b JOIN persons p AS OF TIMESTAMP b.ts ON b.price > 0;
SELECT b.auction FROM bids b JOIN persons p AS OF TIMESTAMP b.price ON b.bidder = p.id;
SELECT b.auction FROM bids b JOIN auctions a AS OF TIMESTAMP b.ts ON b.auction = a.id;
SELECT b.auction FROM bids b JOIN persons p ON b.channel = p.id
