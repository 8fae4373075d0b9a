SELECT window_start, COUNT(*) AS n FROM clicks GROUP BY TUMBLE(PROCTIME(), '1s')
