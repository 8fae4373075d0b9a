SELECT window_start, window_end, auction, COUNT(*) AS bids, SUM(price) AS volume FROM bids GROUP BY CUMULATE(ts, '2s', '10s'), auction;
SELECT /*+ SET_VAR(emit_mode=on_window_close) SET_VAR(parallelism=2) */ window_start, window_end, COUNT(DISTINCT bidder) AS bidders FROM bids GROUP BY CUMULATE(ts, '1m', '1h') HAVING COUNT(*) > 1;
SELECT window_start, window_end, MAX(n) AS hottest FROM (SELECT window_start, window_end, auction, COUNT(*) AS n FROM bids GROUP BY CUMULATE(ts, '2s', '10s'), auction) c GROUP BY window_start, window_end;
SELECT window_start, window_end, SUM(n) AS total FROM (SELECT window_end AS we, auction, COUNT(*) AS n FROM bids GROUP BY TUMBLE(ts, '2s'), auction) c GROUP BY CUMULATE(we, '2s', '10s');
SELECT window_start, window_end, COUNT(*) FROM bids GROUP BY CUMULATE(ts, '3s', '10s');
SELECT window_start, window_end, COUNT(*) FROM bids GROUP BY CUMULATE(ts, '1ms', '1d');
SELECT window_start, window_end, COUNT(*) FROM bids GROUP BY CUMULATE(ts, '10s');
SELECT window_start, window_end, COUNT(*) FROM bids GROUP BY CUMULATE(PROCTIME(), '1s', '10s');
SELECT window_start, window_end, state, COUNT(*) FROM persons GROUP BY CUMULATE(ts, '1s', '10s'), state;
SELECT CUMULATE(ts, '1s', '10s') FROM bids
