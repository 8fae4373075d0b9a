SELECT * FROM (SELECT /*+ SET_VAR(emit_mode=changes) */ window_start, COUNT(*) AS n FROM bids GROUP BY TUMBLE(ts, '10s')) w;
SELECT * FROM (SELECT auction FROM bids) AS x JOIN (SELECT id FROM auctions) y ON x.auction = y.id
