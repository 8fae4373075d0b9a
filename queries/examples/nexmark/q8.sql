-- Nexmark q8, monitor new users: people who opened an auction in the same 10 s window they registered.
SELECT p.id, p.name, p.starttime
FROM (SELECT id, name, window_start AS starttime, window_end AS endtime
      FROM person GROUP BY TUMBLE(date_time, '10s'), id, name) p
JOIN (SELECT seller, window_start AS starttime, window_end AS endtime
      FROM auction GROUP BY TUMBLE(date_time, '10s'), seller) a
ON p.id = a.seller AND p.endtime = a.endtime
