SELECT auction, bogus FROM bids;
SELECT auction, COUNT(*) FROM bids GROUP BY TUMBLE(ts, '10s');
SELECT /*+ SET_VAR(emit_mode=on_window_close) */ channel, COUNT(*) FROM bids GROUP BY channel;
SELECT window_start FROM bids;
SELECT COUNT(*) FROM clicks GROUP BY TUMBLE(n, '1s');
SELECT COUNT(*) FROM bids GROUP BY TUMBLE(ts, 'ten seconds');
SELECT SUM(channel) FROM bids GROUP BY auction;
SELECT /*+ SET_VAR(state_ttl='1h') */ channel, COUNT(*) FROM bids GROUP BY channel;
SELECT /*+ SET_VAR(results_retention='1h') */ channel, COUNT(*) FROM bids GROUP BY channel;
SELECT /*+ SET_VAR(parallelism=0) */ channel, COUNT(*) FROM bids GROUP BY channel;
SELECT COUNT(*) FROM bids GROUP BY HOP(ts, '1ms', '1d');
SELECT /*+ SET_VAR(checkpoint_interval='100ms') */ channel, COUNT(*) FROM bids GROUP BY channel;
SELECT /*+ SET_VAR(checkpoint_interval='100ms') SET_VAR(emit_interval='100ms') */ channel, COUNT(*) AS n FROM bids GROUP BY channel
