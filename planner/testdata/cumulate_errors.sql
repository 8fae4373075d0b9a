SELECT window_start, VAR_POP(price) AS v FROM bids GROUP BY CUMULATE(ts, '1s', '10s');
