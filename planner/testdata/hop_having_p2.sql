SELECT /*+ SET_VAR(parallelism=2) SET_VAR(emit_mode=on_window_close) */ window_start, auction, COUNT(DISTINCT bidder) AS bidders, AVG(price) AS avg_price
FROM bids WHERE channel IN ('a', 'b') GROUP BY HOP(ts, '2s', '10s'), auction HAVING COUNT(*) > 2
