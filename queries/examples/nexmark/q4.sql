-- Nexmark q4, average price for a category: the average of each category's
-- winning bids (the highest bid of each auction while it is open). A running
-- aggregation over a running aggregation; the join's state ages out 1 h of
-- event time after each row.
SELECT /*+ SET_VAR(state_ttl='1h') */ q.category, AVG(q.final) AS avg_final
FROM (SELECT MAX(b.price) AS final, a.category
      FROM auction a JOIN bid b ON a.id = b.auction
      WHERE b.date_time BETWEEN a.date_time AND a.expires
      GROUP BY a.id, a.category) q
GROUP BY q.category
