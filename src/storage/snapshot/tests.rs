//! Tests of snapshots: a busy world comes back whole, byte for byte; every cut, flipped
//! or damaged byte is refused or read as a consistent world, never half-read; bytes past
//! the end, foreign bytes and a newer version say what they are.

use super::*;
use crate::storage::{Column, Entity, FieldDef, Value, World};
use crate::storage::{FieldId, StorageKind};

/// A one-row column holding `v` (of its own type; NULL is an ENTITY).
fn one(v: Value) -> Column {
    match v {
        Value::Int(x) => Column::Int(vec![x]),
        Value::Float(x) => Column::Float(vec![x]),
        Value::Real(x) => Column::Real(vec![x]),
        Value::Bool(x) => Column::Bool(vec![x]),
        Value::Text(x) => Column::Text(vec![x]),
        Value::Entity(x) => Column::Entity(vec![Some(x)]),
        Value::Null => Column::Entity(vec![None]),
    }
}

/// A world with every kind of value, dropped ids, recycled ids, a far id, an empty
/// table, a sparse component and an event type with rows.
fn busy_world() -> World {
    let mut w = World::new();
    let all = |prefix: &str| -> Vec<FieldDef> {
        FieldType::ALL
            .iter()
            .map(|&t| FieldDef::new(format!("{prefix}{}", type_code(t)), t))
            .collect()
    };
    let gone = w.create_component("Gone", vec![]).unwrap();
    // A sparse component dropped leaves its table's number unused.
    let gone_sparse = w
        .create_component_with("GoneS", vec![], StorageKind::Sparse)
        .unwrap();
    w.drop_component(gone_sparse).unwrap();
    let a = w.create_component("A", all("a")).unwrap();
    let s = w
        .create_component_with(
            "S",
            vec![FieldDef::new("x", FieldType::Real).with_default(Value::Real(-0.0))],
            StorageKind::Sparse,
        )
        .unwrap();
    let t = w.create_component("T", vec![]).unwrap();
    // Readers asked: marks and a removal log to keep.
    w.track_changes(a).unwrap();
    w.track_changes(s).unwrap();
    w.track_removals(t).unwrap();
    let values = |i: i64, e: Option<Entity>| {
        vec![
            Value::Int(i),
            Value::Float([f64::NAN, -0.0, f64::INFINITY][i as usize % 3]),
            Value::Real([f32::NEG_INFINITY, 0.5, -0.0][i as usize % 3]),
            Value::Bool(i % 2 == 0),
            Value::Text(["", "naïve 🦀", "it's"][i as usize % 3].into()),
            e.map_or(Value::Null, Value::Entity),
        ]
    };
    let mut ids = Vec::new();
    for i in 0..20 {
        let e = w.spawn_values(vec![(a, values(i, ids.last().copied()))]).unwrap();
        ids.push(e);
    }
    for &e in &ids[..10] {
        w.attach(e, s, vec![Value::Real(1.5)]).unwrap();
    }
    for &e in &ids[5..8] {
        w.attach(e, t, vec![]).unwrap();
        w.detach(e, t).unwrap();
    }
    for &e in &ids[12..16] {
        w.despawn(e).unwrap();
    }
    let again = w.spawn_values(vec![(t, vec![])]).unwrap();
    w.attach(again, s, vec![Value::Real(2.0)]).unwrap();
    let far = Entity::new(5_000_000, 3).unwrap();
    // A stale reference (to a despawned id) and a far id claimed by SPAWN AT.
    let row = values(7, Some(ids[13])).into_iter().map(one).collect();
    w.spawn_batch_at(&[far], vec![(a, row)]).unwrap();
    w.drop_component(gone).unwrap();
    let ev = w
        .create_event("Hit", vec![FieldDef::new("who", FieldType::Entity)], 8)
        .unwrap();
    w.emit(ev, vec![Column::Entity(vec![Some(ids[0]), None])], 2, 3)
        .unwrap();
    w
}

#[test]
fn a_world_comes_back_whole() {
    let w = busy_world();
    let bytes = w.snapshot();
    let back = World::from_snapshot(&bytes).unwrap();
    assert_eq!(back.digest_exact(), w.digest_exact());
    assert!(w.digest_exact().contains("added"), "marks were kept");
    assert!(
        w.removal_log(w.component_by_name("T").unwrap().id())
            .is_some_and(|l| l.len() == 3)
    );
    assert_eq!(back.snapshot(), bytes, "written again, the same bytes");
    // The same next ids: the free list came back in order.
    let (mut w, mut back) = (w, back);
    for _ in 0..6 {
        assert_eq!(
            back.spawn_values(vec![]).unwrap(),
            w.spawn_values(vec![]).unwrap()
        );
    }
    // Values bit for bit: NaN, -0.0, infinities.
    let a = w.component_by_name("A").unwrap().id();
    for (x, y) in w.tables().zip(back.tables()) {
        if x.contains(a) {
            let f = FieldId::new(a, 1);
            let bits = |t: &crate::storage::Table| match t.column(f) {
                Some(Column::Float(v)) => v.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                _ => Vec::new(),
            };
            assert_eq!(bits(x), bits(y));
        }
    }
}

#[test]
fn every_cut_and_every_flipped_byte_is_refused_not_half_read() {
    let bytes = busy_world().snapshot();
    for cut in 0..bytes.len() {
        match World::from_snapshot(&bytes[..cut]) {
            Err(SnapshotError::NotASnapshot | SnapshotError::Truncated { .. }) => {}
            other => panic!("cut at {cut}: {other:?}"),
        }
    }
    for i in (0..bytes.len()).step_by(3) {
        let mut damaged = bytes.clone();
        damaged[i] ^= 0x20;
        match World::from_snapshot(&damaged) {
            Err(_) => {}
            Ok(_) => panic!("byte {i} flipped was read as a world"),
        }
    }
}

/// Recomputes every section's checksum of `bytes` after an edit, so that reading gets
/// past the checksums to what the sections say.
fn reseal(bytes: &mut [u8]) {
    let mut pos = MAGIC.len() + 4;
    while pos + 9 <= bytes.len() {
        let mut len = [0u8; 8];
        len.copy_from_slice(&bytes[pos + 1..pos + 9]);
        let end = pos + 9 + u64::from_le_bytes(len) as usize;
        if end + 4 > bytes.len() {
            return;
        }
        let crc = crc32fast::hash(&bytes[pos..end]);
        bytes[end..end + 4].copy_from_slice(&crc.to_le_bytes());
        pos = end + 4;
    }
}

#[test]
fn damaged_contents_behind_good_checksums_are_refused_or_read_whole() {
    // Each edit is resealed: whatever the section then says, reading either refuses
    // it or builds a world that passes its own check, and never panics.
    let bytes = busy_world().snapshot();
    let mut next = crate::xorshift(0x9e37_79b9_7f4a_7c15);
    let (mut refused, mut read) = (0, 0);
    for _ in 0..4000 {
        let mut damaged = bytes.clone();
        for _ in 0..1 + next() % 3 {
            let i = MAGIC.len() + 4 + (next() as usize) % (bytes.len() - MAGIC.len() - 4);
            damaged[i] = match next() % 4 {
                0 => 0,
                1 => 0xFF,
                2 => damaged[i].wrapping_add(1),
                _ => next() as u8,
            };
        }
        reseal(&mut damaged);
        match World::from_snapshot(&damaged) {
            Ok(world) => {
                world.check_integrity().unwrap();
                read += 1;
            }
            Err(_) => refused += 1,
        }
    }
    assert!(refused > 0 && read > 0, "{refused} refused, {read} read");
}

#[test]
fn bytes_past_the_end_are_refused() {
    let mut bytes = busy_world().snapshot();
    bytes.push(0);
    let end = bytes.len() as u64 - 1;
    assert_eq!(
        World::from_snapshot(&bytes).err(),
        Some(SnapshotError::TrailingBytes { at: end, count: 1 })
    );
}

#[test]
fn foreign_and_newer_bytes_say_what_they_are() {
    assert_eq!(
        World::from_snapshot(b"SQLite format 3\0").err(),
        Some(SnapshotError::NotASnapshot)
    );
    let mut bytes = World::new().snapshot();
    bytes[8..12].copy_from_slice(&(VERSION + 1).to_le_bytes());
    assert_eq!(
        World::from_snapshot(&bytes).err(),
        Some(SnapshotError::NewerVersion { found: VERSION + 1 })
    );
}
