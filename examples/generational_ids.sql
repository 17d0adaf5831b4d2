-- Generational ids: an id names one entity for ever. Despawning frees the slot; the next
-- spawn reuses the slot with the generation raised, so the new entity gets a new id and
-- the old id is refused instead of answering with the newcomer's data.
-- (An id is 64 bits: the slot in the low 32, the generation in the high 32.)

CREATE COMPONENT Name (value TEXT);
CREATE COMPONENT Target (who ENTITY);

SPAWN Name('alpha');
SPAWN Name('beta');
SPAWN Name('gamma');
-- gamma keeps a reference to beta.
INSERT INTO Target (id, who) VALUES (3, 2);

DESPAWN 2;
-- The slot of beta (slot 2) is reused: generation 1, so the id is 2^32 + 2.
SPAWN Name('delta');
SELECT id, Name.value FROM Name ORDER BY id;

-- The old id finds nothing, and writing through it is an error, not a write to delta.
SELECT count(*) AS named_2 FROM Name WHERE id = 2;
INSERT INTO Target (id, who) VALUES (2, 1);
DESPAWN 2;

-- gamma's stale reference does not lead to delta.
SELECT t.id, t.who, n.value AS target_name
FROM Target AS t LEFT JOIN Name AS n ON n.id = t.who;
