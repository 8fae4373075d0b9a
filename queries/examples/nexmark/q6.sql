-- Nexmark q6, average selling price by seller: the average of each
-- seller's winning bids (the highest bid of each auction while it is open)
-- over their last 10 auctions before it and the auction itself, in order of
-- each auction's last bid. The OVER aggregation reads a running aggregate
-- (which Flink's OVER cannot: it does not consume retractions): it is
-- updating, one row per auction, re-emitted as later bids change the
-- frames. Adapted as q4 is: Flink's text selects B.dateTime outside its
-- GROUP BY, here MAX(B.date_time); the join's state ages out 1 h of event
-- time after each row.
SELECT /*+ SET_VAR(state_ttl='1h') */ Q.seller,
       AVG(Q.final) OVER (PARTITION BY Q.seller ORDER BY Q.date_time ROWS BETWEEN 10 PRECEDING AND CURRENT ROW) AS avg_price
FROM (SELECT MAX(B.price) AS final, A.seller, MAX(B.date_time) AS date_time
      FROM auction A JOIN bid B ON A.id = B.auction
      WHERE B.date_time BETWEEN A.date_time AND A.expires
      GROUP BY A.id, A.seller) Q
