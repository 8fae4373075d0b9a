SELECT * FROM (SELECT auction, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price) AS rn FROM bids) t;
SELECT * FROM (SELECT auction, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price) AS rn FROM bids) t WHERE rn > 3;
SELECT * FROM (SELECT auction, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price) AS rn FROM bids) t WHERE rn = 2;
SELECT * FROM (SELECT auction, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price) AS rn FROM bids) t WHERE rn <= 0;
SELECT * FROM (SELECT auction, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price) AS rn FROM bids) t WHERE rn <= 3 AND rn < 2;
SELECT * FROM (SELECT auction, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price) AS rn FROM bids) t WHERE rn <= 100000;
SELECT * FROM (SELECT auction, ROW_NUMBER() OVER (PARTITION BY auction) AS rn FROM bids) t WHERE rn <= 3;
SELECT * FROM (SELECT auction, ROW_NUMBER() OVER (ORDER BY price) FROM bids) t;
SELECT * FROM (SELECT auction, ROW_NUMBER() OVER (ORDER BY price ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS rn FROM bids) t WHERE rn <= 3;
SELECT * FROM (SELECT auction, ROW_NUMBER() OVER (ORDER BY price) AS rn, RANK() OVER (ORDER BY ts) AS r FROM bids) t WHERE rn <= 3;
SELECT * FROM (SELECT auction, ROW_NUMBER() OVER (PARTITION BY nosuch ORDER BY price) AS rn FROM bids) t WHERE rn <= 3;
SELECT * FROM (SELECT auction, COUNT(*) AS n, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price) AS rn FROM bids GROUP BY auction) t WHERE rn <= 3;
SELECT auction, ROW_NUMBER() OVER (ORDER BY price) AS rn FROM bids;
INSERT INTO pg_channels SELECT channel, price AS volume FROM (SELECT channel, price, ROW_NUMBER() OVER (PARTITION BY channel ORDER BY price DESC) AS rn FROM bids) t WHERE rn <= 2
