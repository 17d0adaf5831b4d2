-- A join read through a value index (Link_to_idx) gives its rows in the order the
-- same join gives without the index: the hash step weighs the side read through the
-- index as whole, so it builds on the same side.
CREATE COMPONENT Cell (x INT, y INT, z INT DEFAULT -1)
CREATE COMPONENT Name (s TEXT)
CREATE COMPONENT Link (to ENTITY)
CREATE COMPONENT Stat (f FLOAT, b BOOL DEFAULT TRUE, n INT)
SPAWN Name(CASE WHEN 3 IS NOT NULL THEN '%' END) FROM range(5) AS r(i)
SPAWN Name('A%'), Stat(f => -9.50, b => TRUE, n => (r.i * r.i)) FROM range(16) AS r(i)
SPAWN Link(CASE WHEN id IS NOT NULL THEN id END) FROM Name WHERE TRUE >= TRUE IS NOT NULL
-- params: 9223372036854775807 | 1
INSERT INTO Cell (id, x, y, z) VALUES (12, 41, 23, 28), (10, ?1, ?2, 40), (35, 41, 29, 16)
-- params: CAST('103' AS ENTITY) | CAST(CAST('0.5' AS FLOAT) AS REAL)
UPDATE Link SET to = coalesce(NULL, CASE WHEN CAST('18446744069414584321' AS ENTITY) IS NOT NULL THEN ?1 ELSE Link.to END) WHERE ?2 >= (CAST(-3.0 AS REAL) * 0.5)
SPAWN Link(to => 10)
SPAWN Name(s => CASE WHEN CAST(3.5 AS REAL) IS NOT NULL THEN 'it''s' END), Link(14) FROM range(21) AS r(i)
SELECT coalesce(a.id, CASE WHEN -8.25 IS NOT NULL THEN 31 ELSE a.id END) AS c0, CAST(coalesce(21, -1) AS TEXT) AS c1, (15.75 IS NOT NULL AND 40 IS NOT NULL) AS c2 FROM Name AS a JOIN Link AS b ON b.to = a.id
