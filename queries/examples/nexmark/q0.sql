-- Nexmark q0: pass-through.
SELECT auction, bidder, price, date_time, extra FROM bid
