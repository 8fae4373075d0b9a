SELECT channel AS c, COUNT(*) AS n FROM bids GROUP BY c;
SELECT channel AS c, COUNT(*) AS n FROM bids GROUP BY 1;
SELECT window_start, window_end, auction AS a, COUNT(*) AS n FROM bids GROUP BY TUMBLE(ts, '10s'), 3;
SELECT window_start, window_end, auction AS a, COUNT(*) AS n FROM bids GROUP BY 1, 2, a, HOP(ts, '2s', '10s');
SELECT price % 10 AS bucket, COUNT(*) AS n FROM bids GROUP BY bucket;
SELECT auction AS price, COUNT(*) AS n FROM bids GROUP BY price;
SELECT channel AS c, COUNT(*) AS n FROM bids GROUP BY 2;
SELECT channel AS c, COUNT(*) AS n FROM bids GROUP BY n;
SELECT channel AS c, COUNT(*) AS n FROM bids GROUP BY 3;
SELECT channel AS c, COUNT(*) AS n FROM bids GROUP BY 0;
SELECT channel AS c, COUNT(*) AS n FROM bids GROUP BY d
;
SELECT channel AS c, COUNT(*) AS n FROM bids GROUP BY c HAVING n > 1 AND c <> 'web';
SELECT window_start, auction AS a, SUM(price) AS volume FROM bids GROUP BY TUMBLE(ts, '10s'), a HAVING volume > 100;
SELECT auction AS price, COUNT(*) AS n FROM bids GROUP BY auction HAVING price > 1
