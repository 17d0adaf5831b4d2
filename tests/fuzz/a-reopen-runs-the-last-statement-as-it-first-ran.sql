-- Reopened, the last statement (written ahead of it in the journal) ran again inside a
-- transaction, which attached Name entity by entity and made the two new tables in
-- another order than the statement had: the reopened world's tables differed.
CREATE COMPONENT Pos (x REAL, y REAL DEFAULT 1.5)
CREATE COMPONENT Cell (x INT, y INT, z INT DEFAULT -1)
CREATE COMPONENT Link (to ENTITY)
CREATE TAG Red
SPAWN Link(13) FROM range(9) AS r(i)
SPAWN Red FROM range(32) AS r(i)
CREATE COMPONENT Name (s TEXT)
SPAWN Link(coalesce(43, NULL)) FROM range(19) AS r(i)
SPAWN Name(s => ''), Pos(CAST(-0.5 AS REAL), CAST(-6.5 AS REAL)), Cell(x => -16, y => abs(-15)) FROM range(17) AS r(i)
SPAWN Link(13) FROM range(9) AS r(i)
SPAWN Red FROM range(31) AS r(i)
CREATE SYSTEM s5 AS BEGIN SPAWN Cell(x => CAST(-15.00 AS INT), y => length('A%'), z => (0 / -9223372036854775807)) FROM range(25) AS r(i); DELETE FROM Pos WHERE FALSE IN (SELECT DISTINCT TRUE AS c0 FROM entities); END
TICK 2
SPAWN Link(to => coalesce(159, 136)) FROM range(18) AS r(i)
SPAWN Pos(x => (CAST(8.0 AS REAL) + CAST(-10.0 AS REAL)), y => CAST(CAST('NaN' AS FLOAT) AS REAL)) FROM range(23) AS r(i)
-- params: CAST('307' AS ENTITY)
SPAWN Link(?1) FROM range(34) AS r(i)
INSERT OR REPLACE INTO Name (id, s) VALUES (40, 'B'), (235, 'é')
.reopen
