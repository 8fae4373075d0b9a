-- Nexmark q10, log to file system: every bid into CSV files partitioned by day and minute
-- (an append-only file sink under the data directory's files/nexmark/q10/bid, committed at checkpoints).
CREATE TABLE IF NOT EXISTS fs_sink (
  auction BIGINT,
  bidder BIGINT,
  price BIGINT,
  date_time TIMESTAMP(3),
  extra VARCHAR(256),
  dt VARCHAR(10),
  hm VARCHAR(5)
) ENGINE=file ENGINE_ATTRIBUTE='{"path": "nexmark/q10/bid", "format": "csv", "partition_by": "dt, hm"}';

INSERT INTO fs_sink
SELECT auction, bidder, price, date_time, extra, DATE_FORMAT(date_time, '%Y-%m-%d'), DATE_FORMAT(date_time, '%H:%i')
FROM bid
