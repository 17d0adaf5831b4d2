-- A world that keeps moving, for the explorer (docs/explorer.md) to look at: 2,000
-- walkers in a 200 × 200 field, each turning back at its edges, their health running
-- down and starting again; 20 leaders standing still, each walker following one of them
-- (Follows: a relation through an ENTITY field).
-- Serve it: ecsql serve --tick-rate 30 --http 127.0.0.1:8080 examples/crowd.sql

CREATE COMPONENT Name (value TEXT);
CREATE COMPONENT Position (x REAL, y REAL);
CREATE COMPONENT Velocity (x REAL, y REAL);
CREATE COMPONENT Health (hp INT DEFAULT 100);
CREATE COMPONENT Follows (leader ENTITY);
CREATE TAG Leader;

SPAWN Name('leader ' || i), Position(x => 10 * i, y => 100), Leader FROM range(20) AS r(i);
SPAWN Name('walker ' || i), Position(x => (i * 37) % 200, y => (i * 91) % 200),
      Velocity(x => ((i % 7) - 3) * 0.5, y => ((i % 5) - 2) * 0.5), Health(50 + i % 50)
  FROM range(2000) AS r(i);
-- Each walker follows the leader its number picks.
INSERT INTO Follows (id, leader)
  SELECT w.id, l.id FROM Name AS w
  JOIN Name AS l ON l.value = 'leader ' || (CAST(substr(w.value, 8) AS INT) % 20)
  WHERE w.value LIKE 'walker %';

CREATE SYSTEM walk AS
  UPDATE Position SET x = Position.x + Velocity.x, y = Position.y + Velocity.y FROM Velocity;
CREATE SYSTEM turn AFTER walk AS
  UPDATE Velocity SET x = CASE WHEN Position.x < 0 OR Position.x > 200 THEN -Velocity.x ELSE Velocity.x END,
                      y = CASE WHEN Position.y < 0 OR Position.y > 200 THEN -Velocity.y ELSE Velocity.y END
  FROM Position;
CREATE SYSTEM tire EVERY 10 TICKS AS
  UPDATE Health SET hp = CASE WHEN Health.hp <= 1 THEN 100 ELSE Health.hp - 1 END;

TICK 10;
SELECT count(*) AS walkers FROM Velocity;
SELECT Name.value, Position.x, Position.y, Health.hp FROM Name, Position, Health ORDER BY id LIMIT 3;
SELECT Follows.leader, count(*) AS followers FROM Follows GROUP BY Follows.leader ORDER BY Follows.leader LIMIT 3;
