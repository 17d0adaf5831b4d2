//! Differential test of the storage kernel against a naive model: a map of entity -> map of
//! component -> values. Long seeded random sequences of spawn, spawn_batch, insert, remove,
//! despawn, set, door writes, drop_component and deliberately invalid operations run on
//! both; after every step every entity's full state is compared, the columnar door's view
//! is compared, and the world's own integrity check runs, as does the check that every
//! index (one on each component) holds exactly what the tables do.
//!
//! `ECSQL_SEED=N` replays one seed; `ECSQL_STEPS=N` changes the length of each run.

use std::collections::{BTreeMap, BTreeSet};

use ecsql::{
    Column, ComponentId, Entity, FieldDef, FieldType, Filter, IndexMethod, Indexes, StorageError,
    StorageKind, Value, World, create_index,
};

use crate::common;

use common::Rng;

/// The draws this file makes, beside `Rng::next`.
trait Draw {
    fn below(&mut self, n: usize) -> usize;
    fn chance(&mut self, percent: u64) -> bool;
    fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T>;
}

impl Draw for Rng {
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        (!items.is_empty()).then(|| &items[self.below(items.len())])
    }
}

/// The component types of the test world, by position in `SCHEMA`.
const SCHEMA: &[(&str, &[(&str, FieldType)])] = &[
    ("Position", &[("x", FieldType::Real), ("y", FieldType::Real)]),
    ("Health", &[("hp", FieldType::Int)]),
    ("Name", &[("value", FieldType::Text)]),
    ("Target", &[("of", FieldType::Entity)]),
    ("Body", &[("mass", FieldType::Float), ("asleep", FieldType::Bool)]),
    ("Frozen", &[]),
];
const POSITION: usize = 0;
const HEALTH: usize = 1;
const BODY: usize = 4;
const FROZEN: usize = 5;

type Components = BTreeMap<usize, Vec<Value>>;

struct Harness {
    /// Which `SCHEMA` components are declared sparse.
    sparse: Vec<bool>,
    rng: Rng,
    world: World,
    /// The world's id for each `SCHEMA` entry (a dropped and re-created one gets a new id).
    ids: Vec<ComponentId>,
    model: BTreeMap<Entity, Components>,
    despawned: Vec<Entity>,
    ever_issued: BTreeSet<Entity>,
    /// While a transaction is open: what the model was at BEGIN, and the world's digest.
    begun: Option<(Saved, String)>,
}

/// The model's side of a transaction: what ROLLBACK must bring back.
type Saved = (
    Vec<ComponentId>,
    BTreeMap<Entity, Components>,
    Vec<Entity>,
    BTreeSet<Entity>,
);

macro_rules! ensure {
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            return Err(format!($($msg)+));
        }
    };
}

impl Harness {
    fn new(seed: u64) -> Harness {
        let mut world = World::new();
        // Odd seeds keep some components sparse (never Position, which the door check
        // reads through archetype tables): every check below must hold either way.
        let mut rng = Rng(seed);
        let sparse: Vec<bool> = (0..SCHEMA.len())
            .map(|c| seed % 2 == 1 && c != POSITION && rng.chance(50))
            .collect();
        let ids = (0..SCHEMA.len())
            .map(|c| declare(&mut world, c, sparse[c]))
            .collect();
        Harness {
            sparse,
            rng,
            world,
            ids,
            model: BTreeMap::new(),
            despawned: Vec::new(),
            ever_issued: BTreeSet::new(),
            begun: None,
        }
    }

    fn random_value(&mut self, ty: FieldType) -> Value {
        match ty {
            FieldType::Int => Value::Int(self.rng.below(2001) as i64 - 1000),
            FieldType::Float => Value::Float(self.rng.below(1000) as f64 / 8.0),
            FieldType::Real => Value::Real(self.rng.below(1000) as f32 / 4.0 - 100.0),
            FieldType::Bool => Value::Bool(self.rng.chance(50)),
            FieldType::Text => {
                let words = ["", "ziggy", "it's", "naïve", "a b", "🦀"];
                Value::from(*self.rng.pick(&words).unwrap())
            }
            FieldType::Entity => {
                let live: Vec<Entity> = self.model.keys().copied().collect();
                match self.rng.below(3) {
                    0 => Value::Null,
                    1 => self.rng.pick(&live).map_or(Value::Null, |&e| Value::Entity(e)),
                    _ => self
                        .rng
                        .pick(&self.despawned)
                        .map_or(Value::Null, |&e| Value::Entity(e)),
                }
            }
        }
    }

    /// A value of some other type than `ty`.
    fn wrong_value(&mut self, ty: FieldType) -> Value {
        let others: Vec<FieldType> = FieldType::ALL.into_iter().filter(|&t| t != ty).collect();
        let other = *self.rng.pick(&others).unwrap();
        match self.random_value(other) {
            // NULL fits ENTITY fields only, so it is wrong for any other type.
            Value::Null if ty == FieldType::Entity => Value::Int(1),
            v => v,
        }
    }

    fn random_row(&mut self, c: usize) -> Vec<Value> {
        SCHEMA[c].1.iter().map(|&(_, ty)| self.random_value(ty)).collect()
    }

    fn random_set(&mut self) -> Vec<usize> {
        (0..SCHEMA.len()).filter(|_| self.rng.chance(40)).collect()
    }

    fn live(&mut self) -> Option<Entity> {
        let live: Vec<Entity> = self.model.keys().copied().collect();
        self.rng.pick(&live).copied()
    }

    fn issued(&mut self, e: Entity) -> Result<(), String> {
        ensure!(self.ever_issued.insert(e), "id {e:?} was issued twice");
        Ok(())
    }

    /// One random operation on both the world and the model. Returns what it did.
    fn step(&mut self) -> Result<String, String> {
        let crowded = self.model.len() > 150;
        let roll = self.rng.below(100);
        Ok(match roll {
            0..=14 if !crowded => {
                let set = self.random_set();
                let rows: Vec<(usize, Vec<Value>)> = set.iter().map(|&c| (c, self.random_row(c))).collect();
                let e = self
                    .world
                    .spawn_values(rows.iter().map(|(c, v)| (self.ids[*c], v.clone())).collect())
                    .map_err(|e| format!("spawn failed: {e}"))?;
                self.issued(e)?;
                self.model.insert(e, rows.into_iter().collect());
                format!("spawn {e:?} with {set:?}")
            }
            15..=19 if !crowded => {
                let n = self.rng.below(6);
                let set = self.random_set();
                let rows: Vec<Components> = (0..n)
                    .map(|_| set.iter().map(|&c| (c, self.random_row(c))).collect())
                    .collect();
                let batch = set.iter().map(|&c| (self.ids[c], columns_of(c, &rows))).collect();
                let ids = self
                    .world
                    .spawn_columns(n, batch)
                    .map_err(|e| format!("spawn_batch failed: {e}"))?;
                ensure!(ids.len() == n, "spawn_batch({n}) returned {} ids", ids.len());
                for (e, row) in ids.into_iter().zip(rows) {
                    self.issued(e)?;
                    self.model.insert(e, row);
                }
                format!("spawn_batch {n} with {set:?}")
            }
            20..=34 => {
                let Some(e) = self.live() else {
                    return Ok("skip".into());
                };
                let c = self.rng.below(SCHEMA.len());
                let row = self.random_row(c);
                let result = self.world.attach(e, self.ids[c], row.clone());
                if self.model[&e].contains_key(&c) {
                    ensure!(
                        matches!(result, Err(StorageError::AlreadyHasComponent { .. })),
                        "insert of a present component gave {result:?}"
                    );
                } else {
                    result.map_err(|err| format!("insert failed: {err}"))?;
                    self.model.get_mut(&e).unwrap().insert(c, row);
                }
                format!("insert {} into {e:?}", SCHEMA[c].0)
            }
            35..=49 => {
                let Some(e) = self.live() else {
                    return Ok("skip".into());
                };
                let c = self.rng.below(SCHEMA.len());
                let result = self.world.detach(e, self.ids[c]);
                if self.model.get_mut(&e).unwrap().remove(&c).is_some() {
                    result.map_err(|err| format!("remove failed: {err}"))?;
                } else {
                    ensure!(
                        matches!(result, Err(StorageError::MissingComponent { .. })),
                        "remove of an absent component gave {result:?}"
                    );
                }
                format!("remove {} from {e:?}", SCHEMA[c].0)
            }
            50..=53 => {
                // A batch: a random share of the live entities, or every one with the
                // same components (a whole table), in a random order.
                let Some(e) = self.live() else {
                    return Ok("skip".into());
                };
                let mut batch: Vec<Entity> = if self.rng.chance(50) {
                    let set: Vec<usize> = self.model[&e].keys().copied().collect();
                    self.model
                        .iter()
                        .filter(|(_, c)| c.keys().copied().eq(set.iter().copied()))
                        .map(|(&e, _)| e)
                        .collect()
                } else {
                    let share = 1 + self.rng.below(100) as u64;
                    let picks: Vec<bool> = (0..self.model.len()).map(|_| self.rng.chance(share)).collect();
                    self.model
                        .keys()
                        .zip(picks)
                        .filter(|(_, p)| *p)
                        .map(|(&e, _)| e)
                        .collect()
                };
                for i in (1..batch.len()).rev() {
                    batch.swap(i, self.rng.below(i + 1));
                }
                self.world
                    .despawn_batch(&batch)
                    .map_err(|err| format!("despawn_batch failed: {err}"))?;
                for e in &batch {
                    self.model.remove(e);
                    self.despawned.push(*e);
                }
                format!("despawn_batch {batch:?}")
            }
            54..=61 => {
                let Some(e) = self.live() else {
                    return Ok("skip".into());
                };
                self.world
                    .despawn(e)
                    .map_err(|err| format!("despawn failed: {err}"))?;
                self.model.remove(&e);
                self.despawned.push(e);
                format!("despawn {e:?}")
            }
            62..=76 => {
                let Some(e) = self.live() else {
                    return Ok("skip".into());
                };
                let c = self.rng.below(BODY + 1); // not the tag: it has no field
                let f = self.rng.below(SCHEMA[c].1.len());
                let ty = SCHEMA[c].1[f].1;
                let field = self.world.field(self.ids[c], SCHEMA[c].1[f].0).unwrap();
                let wrong = self.rng.chance(20);
                let value = if wrong {
                    self.wrong_value(ty)
                } else {
                    self.random_value(ty)
                };
                let result = self.world.set(e, field, value.clone());
                let has = self.model[&e].contains_key(&c);
                match (has, wrong) {
                    (true, false) => {
                        result.map_err(|err| format!("set failed: {err}"))?;
                        self.model.get_mut(&e).unwrap().get_mut(&c).unwrap()[f] = value;
                    }
                    (true, true) => ensure!(
                        matches!(result, Err(StorageError::TypeMismatch { .. })),
                        "set of {value:?} into {ty} gave {result:?}"
                    ),
                    (false, _) => ensure!(result.is_err(), "set on an absent component succeeded"),
                }
                format!("set {}.{} of {e:?}", SCHEMA[c].0, SCHEMA[c].1[f].0)
            }
            77..=81 => {
                // A spawn whose last value is of the wrong type must leave no trace.
                let mut set = self.random_set();
                set.retain(|&c| c != FROZEN); // the one component without a field to spoil
                if set.is_empty() {
                    set.push(HEALTH);
                }
                let mut rows: Vec<(ComponentId, Vec<Value>)> =
                    set.iter().map(|&c| (self.ids[c], self.random_row(c))).collect();
                let last = *set.last().unwrap();
                rows.last_mut().unwrap().1[0] = self.wrong_value(SCHEMA[last].1[0].1);
                let result = self.world.spawn_values(rows);
                ensure!(result.is_err(), "an ill-typed spawn succeeded: {result:?}");
                "ill-typed spawn".into()
            }
            82..=86 => {
                // Every operation on a despawned id is refused.
                let Some(&gone) = self.rng.pick(&self.despawned) else {
                    return Ok("skip".into());
                };
                let (c, x) = (
                    self.ids[POSITION],
                    self.world.field(self.ids[POSITION], "x").unwrap(),
                );
                let refused = |r: Result<(), StorageError>| r == Err(StorageError::DespawnedEntity(gone));
                ensure!(
                    refused(self.world.value(gone, x).map(drop)),
                    "get on a despawned id"
                );
                ensure!(
                    refused(self.world.set(gone, x, Value::Real(0.0))),
                    "set on a despawned id"
                );
                ensure!(refused(self.world.detach(gone, c)), "remove on a despawned id");
                ensure!(refused(self.world.despawn(gone)), "despawn on a despawned id");
                ensure!(!self.world.contains(gone), "a despawned id is contained");
                format!("stale ops on {gone:?}")
            }
            87..=93 => {
                // A system through the columnar door: x *= 2 for Position without Frozen.
                let x = self.world.field(self.ids[POSITION], "x").unwrap();
                let filter = Filter::new().with(self.ids[POSITION]).without(self.ids[FROZEN]);
                for table in self.world.matching_tables(&filter).unwrap() {
                    let mut table = self.world.table_mut(table).unwrap();
                    for x in table.slice_mut::<f32>(x).unwrap() {
                        *x *= 2.0;
                    }
                }
                for components in self.model.values_mut() {
                    if components.contains_key(&FROZEN) {
                        continue;
                    }
                    if let Some(Value::Real(x)) = components.get_mut(&POSITION).map(|row| &mut row[0]) {
                        *x *= 2.0;
                    }
                }
                "door: Position.x *= 2 without Frozen".into()
            }
            94 => {
                // Drop a component type and declare it again: it is gone from every entity.
                let c = self.rng.below(SCHEMA.len());
                let had = self.model.values().filter(|m| m.contains_key(&c)).count();
                let detached = self
                    .world
                    .drop_component(self.ids[c])
                    .map_err(|e| e.to_string())?;
                ensure!(
                    detached == had,
                    "drop_component detached {detached}, model had {had}"
                );
                self.model.values_mut().for_each(|m| {
                    m.remove(&c);
                });
                self.ids[c] = declare(&mut self.world, c, self.sparse[c]);
                format!("drop and re-declare {}", SCHEMA[c].0)
            }
            95 => {
                // SPAWN AT: an id in a slot never used, past the end; now and then far
                // past it, where the index keeps slots sparsely.
                let far = if self.rng.chance(10) { 1_000_000 } else { 0 };
                let slot = far
                    + self
                        .ever_issued
                        .iter()
                        .map(|e| e.to_bits() as u32)
                        .max()
                        .unwrap_or(0) as u64
                    + 1
                    + self.rng.below(3) as u64;
                let generation = self.rng.below(3) as u64;
                let id = Entity::from_bits(generation << 32 | slot).unwrap();
                let set = self.random_set();
                let rows = vec![
                    set.iter()
                        .map(|&c| (c, self.random_row(c)))
                        .collect::<Components>(),
                ];
                let batch = set.iter().map(|&c| (self.ids[c], columns_of(c, &rows))).collect();
                self.world
                    .spawn_batch_at(&[id], batch)
                    .map_err(|e| format!("spawn_batch_at {id:?} failed: {e}"))?;
                self.issued(id)?;
                self.model.insert(id, rows.into_iter().next().unwrap());
                format!("spawn_batch_at {id:?} with {set:?}")
            }
            96..=98 => match self.begun.take() {
                None => {
                    self.world.begin().map_err(|e| e.to_string())?;
                    let saved = (
                        self.ids.clone(),
                        self.model.clone(),
                        self.despawned.clone(),
                        self.ever_issued.clone(),
                    );
                    self.begun = Some((saved, self.world.digest()));
                    "begin".into()
                }
                Some(_) if self.rng.chance(40) => {
                    self.world.commit().map_err(|e| e.to_string())?;
                    "commit".into()
                }
                Some(((ids, model, despawned, ever_issued), digest)) => {
                    self.world.rollback().map_err(|e| e.to_string())?;
                    (self.ids, self.model, self.despawned, self.ever_issued) =
                        (ids, model, despawned, ever_issued);
                    let now = self.world.digest();
                    ensure!(
                        now == digest,
                        "after ROLLBACK the world differs from BEGIN's:\n{}",
                        first_difference(&digest, &now)
                    );
                    "rollback".into()
                }
            },
            _ => "skip".into(),
        })
    }

    /// The world's observable state equals the model's.
    fn compare(&self) -> Result<(), String> {
        self.world.check_integrity()?;
        Indexes::check(&self.world)?;
        ensure!(
            self.world.len() == self.model.len(),
            "{} live entities, model has {}",
            self.world.len(),
            self.model.len()
        );
        for (&e, expected) in &self.model {
            let held = self
                .world
                .components_of(e)
                .map_err(|err| format!("{e:?}: {err}"))?;
            let mut actual = Components::new();
            for &id in &held {
                let c = self
                    .ids
                    .iter()
                    .position(|&i| i == id)
                    .ok_or_else(|| format!("{e:?} holds unknown component {id}"))?;
                let values = self.world.get_component(e, id).map_err(|err| err.to_string())?;
                actual.insert(c, values);
            }
            ensure!(
                &actual == expected,
                "{e:?} holds {actual:?}, model says {expected:?}"
            );
        }
        // The door sees the same Position.x values as the model.
        let x = self.world.field(self.ids[POSITION], "x").unwrap();
        let mut seen = BTreeMap::new();
        for id in self
            .world
            .matching_tables(&Filter::new().with(self.ids[POSITION]))
            .unwrap()
        {
            let table = self.world.table(id).unwrap();
            let xs = table.slice::<f32>(x).map_err(|e| e.to_string())?;
            seen.extend(table.entities().iter().copied().zip(xs.iter().copied()));
        }
        let expected: BTreeMap<Entity, f32> = self
            .model
            .iter()
            .filter_map(|(&e, m)| match m.get(&POSITION)?[0] {
                Value::Real(x) => Some((e, x)),
                _ => None,
            })
            .collect();
        ensure!(
            seen == expected,
            "the door sees {seen:?}, model says {expected:?}"
        );
        Ok(())
    }
}

fn declare(world: &mut World, c: usize, sparse: bool) -> ComponentId {
    let (name, fields) = SCHEMA[c];
    let fields = fields.iter().map(|&(f, ty)| FieldDef::new(f, ty)).collect();
    let storage = if sparse {
        StorageKind::Sparse
    } else {
        StorageKind::Dense
    };
    let id = world.create_component_with(name, fields, storage).unwrap();
    // Every component is indexed, so every step below also checks that the indexes stay
    // exactly what the tables hold.
    let field = |f: &str| world.field(id, f).unwrap();
    let fields: Vec<_> = SCHEMA[c].1.iter().map(|&(f, _)| field(f)).collect();
    if c == POSITION {
        create_index(world, None, IndexMethod::Spatial, &fields).unwrap();
    } else {
        for f in fields {
            create_index(world, None, IndexMethod::Value, &[f]).unwrap();
        }
    }
    id
}

/// Component `c`'s fields as batch columns, one value per row.
fn columns_of(c: usize, rows: &[Components]) -> Vec<Column> {
    SCHEMA[c]
        .1
        .iter()
        .enumerate()
        .map(|(f, &(_, ty))| {
            let mut column = Column::new(ty);
            for row in rows {
                if let Err(value) = column.push(row[&c][f].clone()) {
                    panic!("test bug: {value:?} generated for a {ty} column");
                }
            }
            column
        })
        .collect()
}

/// The first line where two digests differ, for a readable failure.
fn first_difference(before: &str, after: &str) -> String {
    let mut lines = before.lines().zip(after.lines());
    match lines.find(|(a, b)| a != b) {
        Some((a, b)) => format!("BEGIN: {a:.300}\nnow:   {b:.300}"),
        None => format!(
            "{} lines at BEGIN, {} now",
            before.lines().count(),
            after.lines().count()
        ),
    }
}

fn run(seed: u64, steps: usize) -> Result<(), String> {
    let mut h = Harness::new(seed);
    let mut history: Vec<String> = Vec::new();
    for step in 0..steps {
        let done = h.step().and_then(|what| {
            history.push(what);
            h.compare()
        });
        if let Err(problem) = done {
            let recent = history[history.len().saturating_sub(5)..].join("\n  ");
            return Err(format!(
                "seed {seed}, step {step}: {problem}\nlast operations:\n  {recent}\n\
                 replay with ECSQL_SEED={seed} cargo test --test database differential::"
            ));
        }
    }
    Ok(())
}

fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok()?.parse().ok()
}

#[test]
fn storage_matches_a_naive_model() {
    let steps = env_number("ECSQL_STEPS").map_or(4000, |n| n as usize);
    let seeds: Vec<u64> = match env_number("ECSQL_SEED") {
        Some(seed) => vec![seed],
        None => (1..=6).collect(),
    };
    for seed in seeds {
        if let Err(report) = run(seed, steps) {
            panic!("{report}");
        }
    }
}
