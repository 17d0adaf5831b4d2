-- A k-nearest search counted the points of no place (a NaN coordinate) among its candidates,
-- so one that passed the WHERE stood in for a nearer point: the index gave NaN, the scan 30.87.
CREATE COMPONENT Pos (x REAL, y REAL DEFAULT 1.5)
CREATE COMPONENT Hp (v INT DEFAULT 10)
CREATE COMPONENT Name (s TEXT)
CREATE COMPONENT Stat (f FLOAT, b BOOL DEFAULT TRUE, n INT)
SPAWN Pos(y => CAST(-0.0 AS REAL)), Name('%'), Stat(sqrt(abs(-2.00)), CAST(25.0 AS REAL) IS NOT NULL, CAST(-15.75 AS INT))
SPAWN Hp(6), Pos((CAST(-9.0 AS REAL) * 0.5), CAST('NaN' AS REAL))
SPAWN Pos(x => CAST(-19.75 AS REAL), y => CAST(8.75 AS REAL)), Hp() FROM range(1) AS r(i)
SELECT id, distance((Pos.x, Pos.y), (10, 17)) AS d FROM Pos WHERE has(Hp) ORDER BY distance((Pos.x, Pos.y), (10, 17)) LIMIT 1
