SELECT auction, price, ts, AVG(price) OVER (PARTITION BY auction ORDER BY ts ROWS BETWEEN 10 PRECEDING AND CURRENT ROW) AS avg10, COUNT(*) OVER (PARTITION BY auction ORDER BY ts ROWS BETWEEN 10 PRECEDING AND CURRENT ROW) AS n FROM bids;
SELECT /*+ SET_VAR(parallelism=2) */ bidder, SUM(price) OVER (PARTITION BY bidder ORDER BY ts RANGE BETWEEN INTERVAL 1 MINUTE PRECEDING AND CURRENT ROW) / 100 AS dollars, MAX(price * 2) OVER (PARTITION BY bidder ORDER BY ts RANGE BETWEEN INTERVAL 1 MINUTE PRECEDING AND CURRENT ROW) AS top FROM bids WHERE price > 10;
SELECT channel, FIRST_VALUE(price) OVER (PARTITION BY channel ORDER BY ts) AS first_price, LAST_VALUE(price) OVER (ORDER BY ts ROWS UNBOUNDED PRECEDING) AS last_price FROM bids;
SELECT channel, FIRST_VALUE(price) OVER (PARTITION BY channel ORDER BY ts) AS first_price FROM bids;
SELECT window_end, n, SUM(n) OVER (ORDER BY window_end ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS last3 FROM bids_per_10s;
SELECT /*+ SET_VAR(parallelism=2) SET_VAR(state_ttl='1h') */ q.seller, AVG(q.final) OVER (PARTITION BY q.seller ORDER BY q.dt ROWS BETWEEN 10 PRECEDING AND CURRENT ROW) AS avg_final
FROM (SELECT MAX(b.price) AS final, a.seller, MAX(b.ts) AS dt FROM auctions a JOIN bids b ON a.id = b.auction GROUP BY a.id, a.seller) q;
SELECT auction, COUNT(*) OVER (PARTITION BY auction ORDER BY price ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM bids;
SELECT auction, COUNT(*) OVER (PARTITION BY auction ORDER BY ts DESC) FROM bids;
SELECT auction, COUNT(*) OVER (PARTITION BY auction) FROM bids;
SELECT auction, COUNT(*) OVER (PARTITION BY auction ORDER BY ts ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) FROM bids;
SELECT auction, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price), COUNT(*) OVER (PARTITION BY auction ORDER BY ts) FROM bids;
SELECT auction, COUNT(*) OVER (PARTITION BY auction ORDER BY ts), COUNT(*) FROM bids GROUP BY auction;
SELECT url, COUNT(*) OVER (ORDER BY n) FROM clicks;
SELECT auction, LAG(price) OVER (PARTITION BY auction ORDER BY ts) FROM bids;
SELECT auction, SUM(price) OVER (PARTITION BY auction ORDER BY ts RANGE BETWEEN 10 PRECEDING AND CURRENT ROW) FROM bids;
SELECT auction, SUM(price) OVER (PARTITION BY auction ORDER BY ts ROWS BETWEEN 100000 PRECEDING AND CURRENT ROW) FROM bids;
SELECT q.auction, SUM(q.n) OVER (PARTITION BY q.auction ORDER BY q.auction RANGE BETWEEN INTERVAL 1 SECOND PRECEDING AND CURRENT ROW) FROM (SELECT auction, COUNT(*) AS n FROM bids GROUP BY auction) q;
SELECT auction, price FROM bids WHERE COUNT(*) OVER (PARTITION BY auction ORDER BY ts) > 1;
SELECT auction, COUNT(*) OVER (PARTITION BY auction ORDER BY ts) AS window_start FROM bids
;
SELECT window_start, auction, MAX(top3) AS m FROM (SELECT auction, ts, SUM(price) OVER (PARTITION BY auction ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS top3 FROM bids) o GROUP BY TUMBLE(ts, '10s'), auction;
SELECT /*+ SET_VAR(state_ttl='1h') */ seller, COUNT(*) AS n FROM (SELECT q.seller, AVG(q.final) OVER (PARTITION BY q.seller ORDER BY q.dt ROWS BETWEEN 10 PRECEDING AND CURRENT ROW) AS avg_final
FROM (SELECT MAX(b.price) AS final, a.seller, MAX(b.ts) AS dt FROM auctions a JOIN bids b ON a.id = b.auction GROUP BY a.id, a.seller) q) o GROUP BY seller;
SELECT /*+ SET_VAR(emit_mode='on_window_close') */ auction, COUNT(*) OVER (PARTITION BY auction ORDER BY ts) FROM bids
