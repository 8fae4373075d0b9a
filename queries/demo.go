package queries

// DemoSQL is what `streamsql serve --demo` creates: a throttled Nexmark bid
// stream and a view over it.
const DemoSQL = `CREATE TABLE IF NOT EXISTS demo_bids (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR(64),
  date_time TIMESTAMP(3)) ENGINE=nexmark
  ENGINE_ATTRIBUTE='{"kind": "bid", "event_time": "date_time", "events_per_second": 100}';
CREATE VIEW demo_bids_per_channel AS
  SELECT window_start, window_end, channel, COUNT(*) AS bids, MAX(price) AS max_price
  FROM demo_bids GROUP BY TUMBLE(date_time, '10s'), channel`
