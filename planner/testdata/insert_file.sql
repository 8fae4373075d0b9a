INSERT INTO fs_bids SELECT auction, price, ts, DATE_FORMAT(ts, '%Y-%m-%d') FROM bids WHERE price > 100;
INSERT INTO fs_bids SELECT auction, COUNT(*), MAX(ts), 'x' FROM bids GROUP BY auction;
INSERT INTO side SELECT auction, channel, ts FROM bids;
SELECT b.auction, s.label FROM bids b JOIN side s AS OF TIMESTAMP b.ts ON b.auction = s.id
