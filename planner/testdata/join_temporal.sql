SELECT /*+ SET_VAR(parallelism=2) */ b.auction, b.price, p.name, p.state
FROM bids b JOIN persons p AS OF TIMESTAMP b.ts ON b.bidder = p.id;
SELECT b.auction, p.name FROM bids b LEFT JOIN persons p ON b.bidder = p.id AND p.state = 'OR';
SELECT window_start, p.state, COUNT(*) AS bids FROM bids b JOIN persons p AS OF TIMESTAMP b.ts ON b.bidder = p.id GROUP BY TUMBLE(b.ts, '10s'), p.state
