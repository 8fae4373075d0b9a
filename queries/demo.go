package queries

import (
	"context"
	"fmt"
	"time"
)

// DemoRate is the demo generator's events per second (bids, auctions and
// persons together).
const DemoRate = 2000

// DemoRetention is the demo's windowed views' results_retention: each
// keeps the windows that ended in the last ten minutes of event time
// (the demo's event time follows the wall clock), so a demo left running
// stays bounded.
const DemoRetention = "10m"

// DemoSQL is what `streamsql serve --demo` creates: throttled Nexmark
// streams whose event time starts at baseTime (ms), and views over them:
// one in changes mode, one in on_window_close mode, a windowed join
// (Nexmark q7: append-only, one row per 10 s window, or a few on a tie)
// and an aggregation over an interval join.
func DemoSQL(baseTime int64) string {
	attrs := func(kind string) string {
		return fmt.Sprintf(`ENGINE=nexmark ENGINE_ATTRIBUTE='{"kind": "%s", "event_time": "date_time", "events_per_second": %d, "base_time": %d}'`, kind, DemoRate, baseTime)
	}
	return `CREATE TABLE bid (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR(64), url VARCHAR(256),
  date_time TIMESTAMP(3), extra VARCHAR(256)) ` + attrs("bid") + `;
CREATE TABLE auction (id BIGINT, item_name VARCHAR(64), description VARCHAR(256), initial_bid BIGINT, reserve BIGINT,
  date_time TIMESTAMP(3), expires TIMESTAMP(3), seller BIGINT, category BIGINT, extra VARCHAR(256)) ` + attrs("auction") + `;
CREATE TABLE person (id BIGINT, name VARCHAR(64), email_address VARCHAR(64), credit_card VARCHAR(64), city VARCHAR(64),
  state VARCHAR(8), date_time TIMESTAMP(3), extra VARCHAR(256)) ` + attrs("person") + `;
CREATE VIEW bids_per_channel AS
  SELECT /*+ SET_VAR(results_retention='` + DemoRetention + `') */ window_start, window_end, channel, COUNT(*) AS bids, MAX(price) AS max_price
  FROM bid GROUP BY TUMBLE(date_time, '10s'), channel;
CREATE VIEW hot_auctions AS
  SELECT /*+ SET_VAR(emit_mode=on_window_close) SET_VAR(results_retention='` + DemoRetention + `') */ window_start, window_end, auction, COUNT(*) AS bids
  FROM bid GROUP BY HOP(date_time, '2s', '10s'), auction HAVING COUNT(*) >= 5;
CREATE VIEW highest_bid AS
  SELECT b.auction, b.price, b.bidder, b.date_time
  FROM bid b
  JOIN (SELECT MAX(price) AS maxprice, window_end FROM bid GROUP BY TUMBLE(date_time, '10s')) m
    ON b.price = m.maxprice
  WHERE b.date_time >= m.window_end - INTERVAL 10 SECOND AND b.date_time < m.window_end;
CREATE VIEW bids_on_new_auctions AS
  SELECT /*+ SET_VAR(results_retention='` + DemoRetention + `') */ window_start, window_end, a.category, COUNT(*) AS bids, MAX(b.price) AS max_price
  FROM bid b JOIN auction a ON b.auction = a.id AND b.date_time BETWEEN a.date_time AND a.date_time + INTERVAL 10 SECOND
  GROUP BY TUMBLE(b.date_time, '10s'), a.category`
}

// Demo creates the demo tables and views, unless an earlier start did.
func (e *Engine) Demo(ctx context.Context) error {
	if e.tableDef("bid") != nil {
		return nil
	}
	_, err := e.Exec(ctx, DemoSQL(time.Now().UnixMilli()))
	return err
}
