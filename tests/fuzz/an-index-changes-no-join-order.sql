-- A relation joined by its id waits for the other side whether or not an index serves its filter: read first through the index, a hash step built on the other side and gave its rows in another order.
-- results differ: without indexes: Ok([[Entity(Entity(80))], [Entity(Entity(81))]])
-- with indexes, prepared before: Ok([[Entity(Entity(81))], [Entity(Entity(80))]])
CREATE COMPONENT Pos (x REAL, y REAL DEFAULT 1.5)
CREATE COMPONENT Cell (x INT, y INT, z INT DEFAULT -1)
CREATE COMPONENT Hp (v INT DEFAULT 10)
CREATE COMPONENT Name (s TEXT)
CREATE COMPONENT Link (to ENTITY)
CREATE COMPONENT Stat (f FLOAT, b BOOL DEFAULT TRUE, n INT)
CREATE TAG Red
CREATE TAG Blue
SPAWN Cell(r.i, r.i, abs(43)), Hp(v => abs(r.i)) FROM range(12) AS r(i)
SPAWN Hp(abs(r.i)) FROM range(32) AS r(i)
SPAWN Pos(CAST(16.25 AS REAL), (CAST(-6.5 AS REAL) + CAST(11.5 AS REAL))), Stat(f => 4.00, b => FALSE IS NOT NULL, n => (SELECT count(*) FROM Hp)) FROM range(22) AS r(i)
-- params: CAST('NaN' AS FLOAT)
SPAWN Cell(x => (SELECT count(*) FROM Name), y => 28, z => length('é')), Stat(CASE WHEN CAST(-8.5 AS REAL) IS NOT NULL THEN ?1 ELSE 13.25 END, CAST(29.5 AS REAL) IS NOT NULL, 27)
SPAWN Red, Blue, Link(coalesce(id, id)) FROM Cell WHERE 'a' LIKE 'a%'
SPAWN Hp(v => abs(15)), Link(coalesce(64, 8))
SELECT b.id AS c0 FROM Stat AS a JOIN Link AS b ON b.to = a.id WHERE a.b BETWEEN TRUE AND TRUE GROUP BY b.id
