SELECT auction, price * 2 AS p2, UPPER(channel) AS ch FROM bids WHERE price BETWEEN 100 AND 200 AND ts >= '2024-01-01 00:00:00'
