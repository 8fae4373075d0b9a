SELECT channel, COUNT(*) AS n, SUM(price < 10000) AS cheap FROM bids GROUP BY channel
