-- Nexmark q13, bounded side input join: each bid enriched with the value of its auction's key (auction % 10000)
-- in a bounded side input read once from a CSV file (ENGINE=file; bench and the tests generate files/nexmark/q13/side_input.csv).
CREATE TABLE IF NOT EXISTS side_input (
  `key` BIGINT,
  `value` VARCHAR(64),
  version_time TIMESTAMP(3),
  PRIMARY KEY (`key`)
) ENGINE=file ENGINE_ATTRIBUTE='{"path": "nexmark/q13/side_input.csv", "format": "csv", "event_time": "version_time", "bounded": true}';

SELECT B.auction, B.bidder, B.price, B.date_time, S.`value`
FROM (SELECT *, MOD(auction, 10000) AS side_key FROM bid) B
JOIN side_input S AS OF TIMESTAMP B.date_time
ON B.side_key = S.`key`
