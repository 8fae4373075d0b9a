-- Nexmark q22, get URL directories (not in the original suite): the
-- first three directories of each bid's URL. Illustrates SPLIT_INDEX.
SELECT
    auction, bidder, price, channel,
    SPLIT_INDEX(url, '/', 3) as dir1,
    SPLIT_INDEX(url, '/', 4) as dir2,
    SPLIT_INDEX(url, '/', 5) as dir3 FROM bid
