-- Falling cubes: the "simple ECS" demo of C++ fame, as statements.
-- 10,000 cubes with a Transform, a RigidBody and their own Gravity; a physics system
-- integrates them for 60 frames of 1/60 s. Run it: ecsql examples/falling_cubes.sql

CREATE COMPONENT Transform (x REAL, y REAL, z REAL, rx REAL, ry REAL, rz REAL, scale REAL DEFAULT 1);
CREATE COMPONENT RigidBody (vx REAL, vy REAL, vz REAL);
CREATE COMPONENT Gravity (g REAL);

-- Positions spread over a 200 x 100 x 200 box, spins and gravities from the index, so
-- that every run gives the same numbers.
SPAWN Transform(x => i % 200 - 100, y => 100 + (i * 7) % 100, z => (i * 13) % 200 - 100,
                rx => i % 360, ry => (i * 3) % 360, rz => 0, scale => 1 + (i % 5) / 4.0),
      RigidBody(vx => 0, vy => 0, vz => 0),
      Gravity(g => -(1 + i % 10))
FROM range(10000) AS r(i);

SELECT count(*) AS cubes, min(Transform.y) AS lowest, max(Transform.y) AS highest FROM Transform;

-- One frame is two systems: gravity changes velocity, velocity moves the transform.
-- examples/systems/physics.sql holds them; each .read runs one frame, and
-- examples/systems/ten_frames.sql reads it ten times. Sixty frames: one second.
.read examples/systems/ten_frames.sql
.read examples/systems/ten_frames.sql
.read examples/systems/ten_frames.sql
.read examples/systems/ten_frames.sql
.read examples/systems/ten_frames.sql
.read examples/systems/ten_frames.sql

-- After one second, a cube that started at rest under gravity g has fallen about g/2.
SELECT Gravity.g AS g, count(*) AS cubes, round(avg(RigidBody.vy), 3) AS velocity,
       round(avg(100 + (CAST(id AS INT) - 1) * 7 % 100 - Transform.y), 3) AS fallen
FROM Transform, RigidBody, Gravity
GROUP BY Gravity.g ORDER BY g DESC;

SELECT id, Transform.x, Transform.y, Transform.z, RigidBody.vy FROM Transform, RigidBody ORDER BY id LIMIT 3;
