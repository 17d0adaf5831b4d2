-- Reopened, a transaction's record ran outside a transaction, which attached Hp to
-- entities of several tables table by table where the transaction had attached them one
-- by one: the new tables came in another order, and the reopened world's differed.
CREATE COMPONENT Pos (x REAL, y REAL DEFAULT 1.5)
CREATE COMPONENT Cell (x INT, y INT, z INT DEFAULT -1)
CREATE COMPONENT Hp (v INT DEFAULT 10)
CREATE COMPONENT Link (to ENTITY)
CREATE TAG Blue
BEGIN
SPAWN Blue, Cell(y => CAST(13.25 AS INT), z => r.i) FROM range(9) AS r(i)
-- params: CAST(CAST('3.5' AS FLOAT) AS REAL)
SPAWN Pos(x => (?1 * 0.5), y => (CAST(-9.0 AS REAL) + CAST(16.5 AS REAL))), Cell(x => 9223372036854775807, y => r.i) FROM range(26) AS r(i)
SPAWN Blue, Pos((CAST(3.5 AS REAL) * CAST(11.5 AS REAL)), CAST(-9.0 AS REAL)), Link(to => coalesce(1, 10)) FROM range(7) AS r(i)
INSERT INTO Hp (id, v) VALUES (39, 29), (6, 22), (28, -9223372036854775807)
COMMIT
.reopen
