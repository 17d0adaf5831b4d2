-- One physics frame of examples/falling_cubes.sql (dt = 1/60 s), kept silent so the
-- example prints only its results.
.output /dev/null
UPDATE RigidBody SET vy = RigidBody.vy + Gravity.g / 60.0 FROM Gravity;
UPDATE Transform SET x = Transform.x + RigidBody.vx / 60.0,
                     y = Transform.y + RigidBody.vy / 60.0,
                     z = Transform.z + RigidBody.vz / 60.0
FROM RigidBody;
.output
