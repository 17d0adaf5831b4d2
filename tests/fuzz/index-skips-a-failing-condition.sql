-- Found by the fuzzer: a condition that overflows on the one Cell row is never evaluated
-- with the spatial index, which skips that row; without it the SELECT fails. Allowed (the
-- indexed plan may succeed where the scan fails), and nothing else may differ.
CREATE COMPONENT Cell (x INT, y INT, z INT DEFAULT -1)
CREATE COMPONENT Link (to ENTITY)
CREATE TAG Blue
-- params: -9223372036854775808
SPAWN AT 2 Blue, Cell(?1, 6, -(-2))
SELECT CAST((11.50 / -14.00) AS REAL) AS c0 FROM Link AS a JOIN Cell AS b ON distance((b.x, b.y, b.z), (-10, -1, -7)) <= 0 WHERE 15 <> (b.x + b.x) ORDER BY 1 DESC LIMIT 7
