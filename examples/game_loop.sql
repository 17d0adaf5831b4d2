-- A small game loop, one statement per step: movement, collision (entities closer than
-- the sum of their radii), damage, and death (Health at zero despawns the entity).
-- Each turn is examples/systems/turn.sql; this file sets the scene and runs three turns.

CREATE COMPONENT Position (x REAL, y REAL);
CREATE COMPONENT Velocity (x REAL, y REAL);
CREATE COMPONENT Collider (radius REAL);
CREATE COMPONENT Health (hp INT DEFAULT 100);
CREATE COMPONENT Name (value TEXT);
-- Collisions found this turn: one row per entity hit, pointing at what hit it.
CREATE COMPONENT Hit (by ENTITY);

SPAWN Name('knight'), Position(0, 0), Velocity(1, 0), Collider(1), Health(30);
SPAWN Name('troll'),  Position(6, 0), Velocity(-1, 0), Collider(2), Health(45);
SPAWN Name('bat'),    Position(0, 10), Velocity(0, -2), Collider(0.5), Health(10);
SPAWN Name('rock'),   Position(3, 3), Collider(1);

.print -- turn 1
.read examples/systems/turn.sql
.print -- turn 2
.read examples/systems/turn.sql
.print -- turn 3
.read examples/systems/turn.sql

-- The knight took two hits of 20 with 30 hp and is gone; the troll lives on with 5.
SELECT id, Name.value, Health.hp, Position.x, Position.y FROM Name, Position LEFT JOIN Health ORDER BY id;
