//! Change marks against a naive model: random spawns, sets, attaches, detaches, despawns,
//! writes through the columnar door and exact writes, inside and outside transactions that
//! commit or roll back. The model keeps, per entity, its Position values and the tick at
//! which each field last got a different value (and the component was added); after every
//! operation each live entity's marks in its table must be the model's, and every mark
//! list's bounds must hold.

use std::collections::BTreeMap;

use super::marks::BLOCK_ROWS;
use super::*;

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// An entity's Position in the model: values and marks (added, x changed, y changed).
#[derive(Clone, Debug, PartialEq)]
struct Pos {
    x: f32,
    y: f32,
    added: u64,
    x_at: u64,
    y_at: u64,
}

fn same(a: f32, b: f32) -> bool {
    a == b || (a.is_nan() && b.is_nan())
}

/// Few distinct values, -0.0 and NaN among them, so that writes of the same value (in the
/// one order) are common.
fn value(rng: &mut Rng) -> f32 {
    [0.0, -0.0, 1.0, 2.5, f32::NAN][rng.below(5) as usize]
}

struct Model {
    world: World,
    pos: ComponentId,
    x: FieldId,
    y: FieldId,
    live: BTreeMap<u64, (Entity, Option<Pos>)>,
    /// The model as it was at BEGIN.
    saved: Option<BTreeMap<u64, (Entity, Option<Pos>)>>,
}

impl Model {
    fn check(&self, step: usize, op: &str) {
        for (e, pos) in self.live.values() {
            let (table, row) = self.world.locate(*e).unwrap();
            let table = self.world.table(table).unwrap();
            let row = row.index();
            let found = table.added_marks(self.pos).map(|a| {
                let x = table.column(self.x).unwrap().as_slice::<f32>().unwrap()[row];
                let y = table.column(self.y).unwrap().as_slice::<f32>().unwrap()[row];
                Pos {
                    x,
                    y,
                    added: a.get(row).unwrap(),
                    x_at: table.changed_marks(self.x).unwrap().get(row).unwrap(),
                    y_at: table.changed_marks(self.y).unwrap().get(row).unwrap(),
                }
            });
            let agrees = match (pos, &found) {
                (Some(p), Some(f)) => {
                    same(p.x, f.x) && same(p.y, f.y) && (p.added, p.x_at, p.y_at) == (f.added, f.x_at, f.y_at)
                }
                (None, None) => true,
                _ => false,
            };
            assert!(
                agrees,
                "step {step} ({op}): entity {e}: model {pos:?}, world {found:?}"
            );
        }
        for table in self.world.tables() {
            let fields = [self.x, self.y];
            let lists = fields
                .iter()
                .filter_map(|&f| table.changed_marks(f))
                .chain(table.added_marks(self.pos));
            for list in lists {
                assert_eq!(
                    list.ticks().len(),
                    table.len(),
                    "step {step} ({op}): one mark per row"
                );
                for (row, &t) in list.ticks().iter().enumerate() {
                    assert!(
                        list.blocks()[row / BLOCK_ROWS] >= t && list.latest() >= t,
                        "step {step}: bound"
                    );
                }
            }
        }
    }

    fn pick(&self, rng: &mut Rng, with_pos: Option<bool>) -> Option<(u64, Entity)> {
        let ids: Vec<(u64, Entity)> = self
            .live
            .iter()
            .filter(|(_, (_, p))| with_pos.is_none_or(|w| p.is_some() == w))
            .map(|(&k, (e, _))| (k, *e))
            .collect();
        (!ids.is_empty()).then(|| ids[rng.below(ids.len() as u64) as usize])
    }
}

#[test]
fn change_marks_follow_a_naive_model() {
    for seed in 1..=6u64 {
        let mut world = World::new();
        let pos = world
            .create_component(
                "Position",
                vec![
                    FieldDef::new("x", FieldType::Real),
                    FieldDef::new("y", FieldType::Real),
                ],
            )
            .unwrap();
        let health = world
            .create_component("Health", vec![FieldDef::new("hp", FieldType::Int)])
            .unwrap();
        let x = world.field(pos, "x").unwrap();
        let y = world.field(pos, "y").unwrap();
        let mut m = Model {
            world,
            pos,

            x,
            y,
            live: BTreeMap::new(),
            saved: None,
        };
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        // Rows spawned before tracking starts are marked with the tick tracking began.
        for _ in 0..3 {
            let e = m
                .world
                .spawn_values(vec![(pos, vec![Value::Real(1.0), Value::Real(1.0)])])
                .unwrap();
            m.live.insert(
                e.to_bits(),
                (
                    e,
                    Some(Pos {
                        x: 1.0,
                        y: 1.0,
                        added: 0,
                        x_at: 0,
                        y_at: 0,
                    }),
                ),
            );
        }
        assert!(m.world.track_changes(pos).unwrap());
        let began = m.world.tick();
        for (_, p) in m.live.values_mut() {
            if let Some(p) = p {
                (p.added, p.x_at, p.y_at) = (began, began, began);
            }
        }
        assert!(!m.world.track_changes(pos).unwrap(), "tracked once");
        m.check(0, "track");
        for step in 1..300 {
            let before = m.world.tick();
            let op = rng.below(13);
            let name;
            match op {
                0 => {
                    name = "spawn";
                    let (vx, vy) = (value(&mut rng), value(&mut rng));
                    let mut components = vec![(pos, vec![Value::Real(vx), Value::Real(vy)])];
                    if rng.below(2) == 0 {
                        components.push((health, vec![Value::Int(5)]));
                    }
                    let e = m.world.spawn_values(components).unwrap();
                    let t = m.world.tick();
                    m.live.insert(
                        e.to_bits(),
                        (
                            e,
                            Some(Pos {
                                x: vx,
                                y: vy,
                                added: t,
                                x_at: t,
                                y_at: t,
                            }),
                        ),
                    );
                }
                1 => {
                    name = "spawn_batch";
                    let n = 1 + rng.below(1500) as usize;
                    let vx = value(&mut rng);
                    let ids = m
                        .world
                        .spawn_columns(
                            n,
                            vec![(pos, vec![Column::Real(vec![vx; n]), Column::Real(vec![0.0; n])])],
                        )
                        .unwrap();
                    let t = m.world.tick();
                    for e in ids {
                        m.live.insert(
                            e.to_bits(),
                            (
                                e,
                                Some(Pos {
                                    x: vx,
                                    y: 0.0,
                                    added: t,
                                    x_at: t,
                                    y_at: t,
                                }),
                            ),
                        );
                    }
                }
                2 => {
                    name = "spawn without Position";
                    let e = m.world.spawn_values(vec![(health, vec![Value::Int(1)])]).unwrap();
                    m.live.insert(e.to_bits(), (e, None));
                }
                3 | 4 => {
                    name = "set";
                    let Some((k, e)) = m.pick(&mut rng, Some(true)) else {
                        continue;
                    };
                    let (field, v) = (if rng.below(2) == 0 { x } else { y }, value(&mut rng));
                    m.world.set(e, field, Value::Real(v)).unwrap();
                    let t = m.world.tick();
                    let p = m.live.get_mut(&k).unwrap().1.as_mut().unwrap();
                    let (old, at) = if field == x {
                        (&mut p.x, &mut p.x_at)
                    } else {
                        (&mut p.y, &mut p.y_at)
                    };
                    if !same(*old, v) {
                        *at = t;
                    }
                    *old = v;
                }
                5 => {
                    name = "attach Position";
                    let Some((k, e)) = m.pick(&mut rng, Some(false)) else {
                        continue;
                    };
                    m.world
                        .attach(e, pos, vec![Value::Real(3.0), Value::Real(4.0)])
                        .unwrap();
                    let t = m.world.tick();
                    m.live.get_mut(&k).unwrap().1 = Some(Pos {
                        x: 3.0,
                        y: 4.0,
                        added: t,
                        x_at: t,
                        y_at: t,
                    });
                }
                6 => {
                    name = "detach Position";
                    let Some((k, e)) = m.pick(&mut rng, Some(true)) else {
                        continue;
                    };
                    if m.world.components_of(e).unwrap().len() == 1 {
                        continue;
                    }
                    m.world.detach(e, pos).unwrap();
                    m.live.get_mut(&k).unwrap().1 = None;
                }
                7 => {
                    name = "attach or detach Health (the row moves, marks with it)";
                    let Some((_, e)) = m.pick(&mut rng, Some(true)) else {
                        continue;
                    };
                    if m.world.has(e, health).unwrap() {
                        m.world.detach(e, health).unwrap();
                    } else {
                        m.world.attach(e, health, vec![Value::Int(2)]).unwrap();
                    }
                }
                8 => {
                    name = "despawn";
                    let Some((k, e)) = m.pick(&mut rng, None) else {
                        continue;
                    };
                    m.world.despawn(e).unwrap();
                    m.live.remove(&k);
                }
                9 => {
                    name = "door: rows lent mutably are marked";
                    let Some((_, e)) = m.pick(&mut rng, Some(true)) else {
                        continue;
                    };
                    let (table, _) = m.world.locate(e).unwrap();
                    let len = m.world.table(table).unwrap().len();
                    let start = rng.below(len as u64) as usize;
                    let end = start + 1 + rng.below((len - start) as u64) as usize;
                    let v = value(&mut rng);
                    let ids: Vec<Entity> = m.world.table(table).unwrap().entities()[start..end].to_vec();
                    {
                        let mut t = m.world.table_mut(table).unwrap();
                        t.rows_mut::<f32>(y, start..end).unwrap().fill(v);
                    }
                    let t = m.world.tick();
                    for e in ids {
                        let p = m.live.get_mut(&e.to_bits()).unwrap().1.as_mut().unwrap();
                        p.y = v;
                        p.y_at = t;
                    }
                }
                10 => {
                    name = "exact write of rows or picked rows";
                    let Some((_, e)) = m.pick(&mut rng, Some(true)) else {
                        continue;
                    };
                    let (table, _) = m.world.locate(e).unwrap();
                    let len = m.world.table(table).unwrap().len();
                    let start = rng.below(len as u64) as usize;
                    let end = start + 1 + rng.below((len - start) as u64) as usize;
                    let picked: Option<Vec<u32>> = (rng.below(2) == 0)
                        .then(|| (0..(end - start) as u32).filter(|r| r % 3 != 1).collect());
                    let rows: Vec<usize> = match &picked {
                        Some(p) => p.iter().map(|&r| start + r as usize).collect(),
                        None => (start..end).collect(),
                    };
                    let values: Vec<f32> = rows.iter().map(|_| value(&mut rng)).collect();
                    let ids: Vec<Entity> = rows
                        .iter()
                        .map(|&r| m.world.table(table).unwrap().entities()[r])
                        .collect();
                    {
                        // The values as a column of their own, or as rows of a longer one
                        // (what a pack of small tables writes each table's share from).
                        let before = rng.below(3) as usize;
                        let mut padded = vec![f32::NAN; before];
                        padded.extend(&values);
                        padded.extend(vec![-1.0; rng.below(3) as usize]);
                        let padded = Column::Real(padded);
                        let given = match rng.below(2) {
                            0 => Values::Own(Column::Real(values.clone())),
                            _ => Values::Part(&padded, before..before + values.len()),
                        };
                        let mut t = m.world.table_mut(table).unwrap();
                        t.write_values(x, start..end, picked.as_deref(), given).unwrap();
                    }
                    let t = m.world.tick();
                    for (e, v) in ids.into_iter().zip(values) {
                        let p = m.live.get_mut(&e.to_bits()).unwrap().1.as_mut().unwrap();
                        if !same(p.x, v) {
                            p.x_at = t;
                        }
                        p.x = v;
                    }
                }
                11 => {
                    name = "begin";
                    if m.world.in_transaction() {
                        continue;
                    }
                    m.world.begin().unwrap();
                    m.saved = Some(m.live.clone());
                }
                _ => {
                    if !m.world.in_transaction() {
                        continue;
                    }
                    if rng.below(2) == 0 {
                        name = "commit";
                        m.world.commit().unwrap();
                    } else {
                        name = "rollback";
                        m.world.rollback().unwrap();
                        m.live = m.saved.take().unwrap();
                    }
                }
            }
            assert!(m.world.tick() >= before);
            m.check(step, name);
        }
    }
}

/// Tracking is not part of a transaction: turned on inside one that also dropped a
/// component (so that its rollback puts back an image of the whole world), it stays on.
#[test]
fn tracking_survives_a_rollback_to_a_world_image() {
    let mut world = World::new();
    let a = world
        .create_component("A", vec![FieldDef::new("x", FieldType::Int)])
        .unwrap();
    let b = world.create_component("B", vec![]).unwrap();
    let e = world
        .spawn_values(vec![(a, vec![Value::Int(1)]), (b, vec![])])
        .unwrap();
    world.begin().unwrap();
    world.drop_component(b).unwrap();
    world.track_changes(a).unwrap();
    world.rollback().unwrap();
    assert!(world.component(a).unwrap().is_tracked());
    let (table, row) = world.locate(e).unwrap();
    let table = world.table(table).unwrap();
    assert!(table.added_marks(a).and_then(|m| m.get(row.index())).is_some());
    assert!(!world.track_changes(a).unwrap(), "still tracked");
}

/// A value written inside a transaction before its component was tracked has no old mark
/// to put back: its rollback marks the row as changed, never leaves it looking untouched.
#[test]
fn rolling_back_a_write_made_before_tracking_marks_the_row() {
    let mut world = World::new();
    let a = world
        .create_component("A", vec![FieldDef::new("x", FieldType::Int)])
        .unwrap();
    let x = world.field(a, "x").unwrap();
    let e = world.spawn_values(vec![(a, vec![Value::Int(1)])]).unwrap();
    world.begin().unwrap();
    world.set(e, x, Value::Int(5)).unwrap();
    world.track_changes(a).unwrap();
    let before = world.tick();
    world.rollback().unwrap();
    assert_eq!(world.value(e, x).unwrap(), Value::Int(1));
    let (table, row) = world.locate(e).unwrap();
    let mark = world
        .table(table)
        .unwrap()
        .changed_marks(x)
        .unwrap()
        .get(row.index())
        .unwrap();
    assert!(mark > before, "marked by the rollback ({mark} after {before})");
}
