SELECT n, APPROX_COUNT_DISTINCT(s) FROM (SELECT auction, COUNT(*) AS n, SUM(price) AS s FROM bids GROUP BY auction) r GROUP BY n;
SELECT auction, GROUP_CONCAT(DISTINCT channel ORDER BY price) FROM bids GROUP BY auction;
SELECT auction, BIT_AND(channel) FROM bids GROUP BY auction;
SELECT auction, STDDEV_POP(channel) FROM bids GROUP BY auction;
SELECT auction, GROUP_CONCAT(channel ORDER BY COUNT(*)) FROM bids GROUP BY auction;
