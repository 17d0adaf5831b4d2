-- A small game loop in the shape of the Zig ECS design: movement, collide, damage and kill
-- systems, talking through Collision and Death events. Each TICK is one turn.
-- Run it: ecsql examples/game_loop.sql

CREATE COMPONENT Position (x REAL, y REAL);
CREATE COMPONENT Velocity (x REAL, y REAL);
CREATE COMPONENT Collider (radius REAL);
CREATE COMPONENT Health (hp INT DEFAULT 100);
CREATE COMPONENT Name (value TEXT);

-- Events are rows, not entities: who hit whom this turn, who died and when.
CREATE EVENT Collision (target ENTITY, hit_by ENTITY);
CREATE EVENT Death (who ENTITY, name TEXT, turn INT);

SPAWN Name('knight'), Position(0, 0), Velocity(1, 0), Collider(1), Health(30);
SPAWN Name('troll'),  Position(6, 0), Velocity(-1, 0), Collider(2), Health(45);
SPAWN Name('bat'),    Position(0, 10), Velocity(0, -2), Collider(0.5), Health(10);
SPAWN Name('rock'),   Position(3, 3), Collider(1);

-- Movement, then collision: an entity with Health closer to another collider than their
-- two radii is hit by it.
CREATE SYSTEM movement AS
  UPDATE Position SET x = Position.x + Velocity.x, y = Position.y + Velocity.y FROM Velocity;
CREATE SYSTEM collide AFTER movement AS
  INSERT INTO Collision (target, hit_by)
  SELECT a.id, b.id
  FROM Position AS a, Collider AS ac, Health
  JOIN Position AS b ON b.id <> a.id
  JOIN Collider AS bc ON bc.id = b.id
  WHERE distance((a.x, a.y), (b.x, b.y)) < ac.radius + bc.radius;
-- Damage reads this turn's collisions: 20 hp for each.
CREATE SYSTEM damage AFTER collide AS
  UPDATE Health SET hp = Health.hp - 20 * hits.n
  FROM (SELECT Collision.target AS who, count(*) AS n FROM Collision GROUP BY Collision.target) AS hits
  WHERE hits.who = Health.id;
-- Kill, once everything else ran: a Death event, then the entity goes.
CREATE SYSTEM kill IN PHASE post_update AS BEGIN
  INSERT INTO Death (who, name, turn) SELECT id, Name.value, tick() FROM Health, Name WHERE Health.hp <= 0;
  DESPAWN FROM Health WHERE Health.hp <= 0;
END;
SHOW SYSTEMS;

TICK;
SELECT tick() AS turn, id, Name.value, Health.hp, Position.x, Position.y FROM Name, Position LEFT JOIN Health ORDER BY id;
TICK;
SELECT tick() AS turn, id, Name.value, Health.hp, Position.x, Position.y FROM Name, Position LEFT JOIN Health ORDER BY id;
TICK;

-- The knight took two hits of 20 with 30 hp and is gone; the troll lives on with 5.
SELECT id, Name.value, Health.hp, Position.x, Position.y FROM Name, Position LEFT JOIN Health ORDER BY id;
-- No system reads Death: its rows stay (64 ticks) for anyone to look at.
SELECT Death.who, Death.name, Death.turn FROM Death;
SHOW EVENTS;
