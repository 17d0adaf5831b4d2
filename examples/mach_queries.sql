-- The database-shaped questions of the Mach engine's ECS design, asked in ecsql:
-- "entities with Physics and Location", "entities within 5 units of a point",
-- "players whose Name starts with 'ziggy'".

CREATE COMPONENT Location (x REAL, y REAL, z REAL);
CREATE COMPONENT Physics (mass REAL, vx REAL, vy REAL, vz REAL);
CREATE COMPONENT Name (value TEXT);
CREATE TAG Player;

SPAWN Location(0, 0, 0), Physics(80, 1, 0, 0), Name('ziggy'), Player;
SPAWN Location(3, 4, 0), Physics(75, 0, 1, 0), Name('ziggy_stardust'), Player;
SPAWN Location(10, 0, 0), Name('ziggurat');
SPAWN Location(1, 1, 1), Physics(1000, 0, 0, 0), Name('boulder');
SPAWN Location(-2, 2, 2), Name('zig'), Player;
SPAWN Physics(1, 0, 0, 0), Name('ziggy in limbo'), Player;
-- Many more entities that match none of the questions.
SPAWN Location(x => 100 + i, y => 100, z => 100) FROM range(1000) AS r(i);

-- Entities with Physics and Location: the archetype tables holding both, nothing else.
SELECT id, Name.value, Physics.mass FROM Location, Physics LEFT JOIN Name ORDER BY id;
EXPLAIN SELECT id FROM Location, Physics;

-- Entities within 5 units of the point (1, 2, 0), through a spatial index on Location:
-- the grid visits the cells the sphere touches, not the 1,000 far-away entities.
CREATE SPATIAL INDEX ON Location (x, y, z);
SELECT id, Name.value, round(distance((Location.x, Location.y, Location.z), (1, 2, 0)), 3) AS distance
FROM Location LEFT JOIN Name
WHERE distance((Location.x, Location.y, Location.z), (1, 2, 0)) < 5
ORDER BY distance;
EXPLAIN SELECT id FROM Location WHERE distance((Location.x, Location.y, Location.z), (1, 2, 0)) < 5;

-- The three entities nearest the ziggurat, nearest first.
SELECT id, Name.value FROM Location LEFT JOIN Name
ORDER BY distance((Location.x, Location.y, Location.z), (10, 0, 0)) LIMIT 3;

-- Players whose name starts with 'ziggy'.
SELECT id, Name.value FROM Name WHERE has(Player) AND Name.value LIKE 'ziggy%' ORDER BY id;
