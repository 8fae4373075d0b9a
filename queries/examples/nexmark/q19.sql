-- Nexmark q19, auction Top-10 price: the ten highest bids of each auction
-- (ties by arrival), with their rank: an updating result keyed on auction
-- and rank.
SELECT * FROM
(SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) AS rank_number FROM bid) t
WHERE rank_number <= 10
