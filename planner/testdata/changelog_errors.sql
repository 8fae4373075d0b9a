SELECT * FROM (SELECT auction, COUNT(*) AS n FROM bids GROUP BY auction) r JOIN auctions a ON r.auction = a.id;
SELECT window_start, COUNT(*) AS c FROM (SELECT auction, COUNT(*) AS n, MAX(ts) AS ts FROM bids GROUP BY auction) r GROUP BY TUMBLE(ts, '10s');
INSERT INTO pg_channels SELECT channel, v AS volume FROM (SELECT channel, bidder, SUM(price) AS v FROM bids GROUP BY channel, bidder) r;
SELECT DISTINCT channel, COUNT(*) FROM bids GROUP BY channel;
WITH r AS (SELECT auction FROM r) SELECT * FROM r;
SELECT * FROM auctions a RIGHT JOIN persons p ON a.seller = p.id;
SELECT * FROM bids b JOIN auctions a ON b.auction = a.id RIGHT JOIN persons p ON p.id = a.seller;
SELECT auction, price FROM bids UNION ALL SELECT id FROM auctions;
SELECT auction, price FROM bids UNION ALL SELECT id, name FROM auctions;
SELECT * FROM bids b JOIN (SELECT auction, COUNT(*) AS n FROM bids GROUP BY auction) r ON b.auction = r.auction;
SELECT b.price, p.name FROM bids b JOIN (SELECT id, name, ts FROM persons) p ON b.bidder = p.id AND b.ts BETWEEN p.ts AND p.ts + INTERVAL 1 SECOND;
SELECT r.auction, p.name FROM (SELECT auction, COUNT(*) AS n FROM bids GROUP BY auction) r JOIN persons p ON r.auction = p.id
