-- Falling cubes: the "simple ECS" demo of C++ fame, as a world that runs itself.
-- 10,000 cubes with a Transform, a RigidBody and their own Gravity; two systems integrate
-- them, and TICK 60 runs one second of frames of 1/60 s. Run it: ecsql examples/falling_cubes.sql

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

-- A frame is two systems: gravity changes velocity, then velocity moves the transform.
CREATE SYSTEM gravity AS
  UPDATE RigidBody SET vy = RigidBody.vy + Gravity.g * delta_time() FROM Gravity;
CREATE SYSTEM movement AFTER gravity AS
  UPDATE Transform SET x = Transform.x + RigidBody.vx * delta_time(),
                       y = Transform.y + RigidBody.vy * delta_time(),
                       z = Transform.z + RigidBody.vz * delta_time()
  FROM RigidBody;
SHOW SYSTEMS;

-- One second: sixty frames of 1/60 s (the default dt).
TICK 60;

-- After one second, a cube that started at rest under gravity g has fallen about g/2.
SELECT tick() AS frames, Gravity.g AS g, count(*) AS cubes, round(avg(RigidBody.vy), 3) AS velocity,
       round(avg(100 + (CAST(id AS INT) - 1) * 7 % 100 - Transform.y), 3) AS fallen
FROM Transform, RigidBody, Gravity
GROUP BY Gravity.g ORDER BY g DESC;

SELECT id, Transform.x, Transform.y, Transform.z, RigidBody.vy FROM Transform, RigidBody ORDER BY id LIMIT 3;
