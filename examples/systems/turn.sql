-- One turn of examples/game_loop.sql.
-- Movement.
UPDATE Position SET x = Position.x + Velocity.x, y = Position.y + Velocity.y FROM Velocity;
-- Collision: an entity with Health closer to another collider than their two radii is
-- hit by it (by the lowest id, when several touch it).
INSERT INTO Hit (id, by)
SELECT a.id, min(b.id)
FROM Position AS a, Collider AS ac, Health
JOIN Position AS b ON b.id <> a.id
JOIN Collider AS bc ON bc.id = b.id
WHERE (a.x - b.x) * (a.x - b.x) + (a.y - b.y) * (a.y - b.y)
      < (ac.radius + bc.radius) * (ac.radius + bc.radius)
GROUP BY a.id;
SELECT Hit.id AS hit, Name.value AS name, Hit.by AS by FROM Hit, Name ORDER BY hit;
-- Damage: each hit costs 20 hp. Then the hits are spent.
UPDATE Health SET hp = Health.hp - 20 FROM Hit;
DELETE FROM Hit;
-- Death.
DESPAWN FROM Health WHERE Health.hp <= 0;
