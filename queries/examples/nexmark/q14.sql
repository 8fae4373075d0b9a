-- Nexmark q14, calculation: bids in a price band, the time of day they were
-- placed, and how often 'c' occurs in extra (Flink's count_char UDF,
-- written as an expression).
SELECT auction, bidder, 0.908 * price AS price,
       CASE WHEN HOUR(date_time) >= 8 AND HOUR(date_time) <= 18 THEN 'dayTime'
            WHEN HOUR(date_time) <= 6 OR HOUR(date_time) >= 20 THEN 'nightTime'
            ELSE 'otherTime' END AS bid_time_type,
       date_time, extra,
       CHAR_LENGTH(extra) - CHAR_LENGTH(REPLACE(extra, 'c', '')) AS c_counts
FROM bid
WHERE 0.908 * price > 1000000 AND 0.908 * price < 50000000
