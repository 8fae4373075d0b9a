-- Nexmark q3, local item suggestion: sellers in OR, ID or CA and their auctions in category 10
-- (a regular join of two streams; its state ages out 1 h of event time after each row).
SELECT /*+ SET_VAR(state_ttl='1h') */ p.name, p.city, p.state, a.id
FROM auction a JOIN person p ON a.seller = p.id
WHERE a.category = 10 AND (p.state = 'OR' OR p.state = 'ID' OR p.state = 'CA')
