SELECT * FROM (SELECT auction, COUNT(*) AS n FROM bids GROUP BY auction) r JOIN auctions a ON r.auction = a.id;
SELECT window_start, COUNT(*) AS c FROM (SELECT auction, COUNT(*) AS n, MAX(ts) AS ts FROM bids GROUP BY auction) r GROUP BY TUMBLE(ts, '10s');
INSERT INTO pg_channels SELECT channel, v AS volume FROM (SELECT channel, bidder, SUM(price) AS v FROM bids GROUP BY channel, bidder) r
