//! The index structures beside the alternatives they were chosen over, measured on the
//! structures alone (no SQL), so the choice in docs/architecture.md rests on numbers:
//! - points: ecsql's grid at 1, 4, 16 and 64 points per cell against the `rstar` R*-tree,
//!   on 1,000,000 points uniform in a 1000³ cube: a radius search returning about 100
//!   points (r = 28.8), one returning about 0.5 (r = 5), the 10 nearest, and a frame
//!   moving every point by less than one unit (the R*-tree both updated in place and
//!   rebuilt by bulk load, the way moving points are usually handled with one);
//! - relations: hash buckets against a B-tree of (target, source) pairs, on a random
//!   100,000-entity tree: the children of a random parent, and 10,000 re-parentings.
//!
//! `python3 benches/report.py` prints the ratios; docs/architecture.md records them.

mod common;

use std::collections::BTreeSet;

use common::{Rng, size_group};
use criterion::{BenchmarkGroup, Criterion, criterion_group, criterion_main, measurement::WallTime};
use ecsql::Entity;
use ecsql::bench_support::{Buckets, Grid, Point};
use rstar::RTree;
use rstar::primitives::GeomWithData;

const POINTS: usize = 1_000_000;
const SIDE: f64 = 1000.0;
const DENSITIES: [f64; 4] = [1.0, 4.0, 16.0, 64.0];

type Tree = RTree<GeomWithData<[f64; 3], u64>>;

fn entity(i: usize) -> Entity {
    Entity::from_bits(i as u64 + 1).expect("ids from 1 are valid")
}

fn random_points(rng: &mut Rng) -> Vec<Point> {
    (0..POINTS)
        .map(|_| [0, 1, 2].map(|_| f64::from(rng.unit()) * SIDE))
        .collect()
}

fn grid(points: &[Point], per_cell: f64) -> Grid {
    let mut grid = Grid::with_density(3, per_cell);
    for (i, &p) in points.iter().enumerate() {
        grid.insert(entity(i), p);
    }
    grid.retune();
    grid
}

fn tree(points: &[Point]) -> Tree {
    Tree::bulk_load(
        points
            .iter()
            .enumerate()
            .map(|(i, &p)| GeomWithData::new(p, i as u64))
            .collect(),
    )
}

fn center(rng: &mut Rng) -> Point {
    [0, 1, 2].map(|_| f64::from(rng.unit()) * SIDE)
}

fn grid_name(per_cell: f64) -> String {
    format!("grid_{per_cell}")
}

/// One search bench per structure, each from the same sequence of centers.
fn searches(
    group: &mut BenchmarkGroup<'_, WallTime>,
    grids: &[(f64, Grid)],
    tree: &Tree,
    grid_search: impl Fn(&Grid, Point, &mut Vec<Entity>),
    tree_search: impl Fn(&Tree, Point) -> usize,
) {
    for (per_cell, g) in grids {
        let mut rng = Rng::new(11);
        let mut out = Vec::new();
        group.bench_function(grid_name(*per_cell), |b| {
            b.iter(|| {
                out.clear();
                grid_search(g, center(&mut rng), &mut out);
                out.len()
            })
        });
    }
    let mut rng = Rng::new(11);
    group.bench_function("rstar", |b| b.iter(|| tree_search(tree, center(&mut rng))));
}

fn points(c: &mut Criterion) {
    let mut rng = Rng::new(7);
    let points = random_points(&mut rng);
    let grids: Vec<(f64, Grid)> = DENSITIES.iter().map(|&d| (d, grid(&points, d))).collect();
    let rtree = tree(&points);

    for (name, radius) in [("points_radius_100", 28.8), ("points_radius_small", 5.0)] {
        let mut group = c.benchmark_group(name);
        size_group(&mut group, POINTS);
        searches(
            &mut group,
            &grids,
            &rtree,
            |g, p, out| {
                g.within(p, radius, usize::MAX, out);
            },
            |t, p| t.locate_within_distance(p, radius * radius).count(),
        );
        group.finish();
    }

    let mut group = c.benchmark_group("points_nearest_10");
    size_group(&mut group, POINTS);
    searches(
        &mut group,
        &grids,
        &rtree,
        |g, p, out| {
            if let Some(reach) = g.kth_distance(p, 10) {
                g.within(p, reach, usize::MAX, out);
            }
        },
        |t, p| t.nearest_neighbor_iter(p).take(10).count(),
    );
    group.finish();

    frames(c, &points, grids, rtree);
}

/// Every point moves by less than one unit, alternately forth and back, so the cloud
/// keeps its shape however many frames run.
fn frames(c: &mut Criterion, points: &[Point], grids: Vec<(f64, Grid)>, rtree: Tree) {
    let mut rng = Rng::new(13);
    let velocity: Vec<Point> = (0..POINTS)
        .map(|_| [0, 1, 2].map(|_| f64::from(rng.unit()) - 0.5))
        .collect();
    let moved = |frame: usize, i: usize| -> Point {
        let sign = if frame.is_multiple_of(2) { 1.0 } else { 0.0 };
        let (p, v) = (points[i], velocity[i]);
        [p[0] + v[0] * sign, p[1] + v[1] * sign, p[2] + v[2] * sign]
    };
    let mut group = c.benchmark_group("points_move_all");
    size_group(&mut group, POINTS);
    for (per_cell, mut g) in grids {
        let mut frame = 0;
        group.bench_function(grid_name(per_cell), |b| {
            b.iter(|| {
                frame += 1;
                for i in 0..POINTS {
                    g.insert(entity(i), moved(frame, i));
                }
                g.len()
            })
        });
    }
    let mut current: Vec<Point> = points.to_vec();
    let mut in_place = rtree;
    let mut frame = 0;
    group.bench_function("rstar_update", |b| {
        b.iter(|| {
            frame += 1;
            for (i, at) in current.iter_mut().enumerate() {
                let next = moved(frame, i);
                in_place.remove(&GeomWithData::new(*at, i as u64));
                in_place.insert(GeomWithData::new(next, i as u64));
                *at = next;
            }
            in_place.size()
        })
    });
    let mut frame = 0;
    group.bench_function("rstar_rebuild", |b| {
        b.iter(|| {
            frame += 1;
            let now: Vec<Point> = (0..POINTS).map(|i| moved(frame, i)).collect();
            tree(&now).size()
        })
    });
    group.finish();
}

fn relations(c: &mut Criterion) {
    const N: usize = 100_000;
    let mut rng = Rng::new(17);
    // Entity i + 1's parent is a random earlier entity, as in benches/index.rs.
    let parents: Vec<usize> = (0..N).map(|i| rng.below(i.max(1) as u64) as usize).collect();
    let mut buckets: Buckets<Entity> = Buckets::default();
    let mut pairs: BTreeSet<(Entity, Entity)> = BTreeSet::new();
    for (i, &p) in parents.iter().enumerate() {
        buckets.insert(entity(i), entity(p));
        pairs.insert((entity(p), entity(i)));
    }

    let mut group = c.benchmark_group("relation_children");
    size_group(&mut group, N);
    let mut rng = Rng::new(19);
    group.bench_function("hash_buckets", |b| {
        b.iter(|| buckets.get(&entity(rng.below(N as u64) as usize)).len())
    });
    let mut rng = Rng::new(19);
    group.bench_function("btree_pairs", |b| {
        b.iter(|| {
            let parent = entity(rng.below(N as u64) as usize);
            pairs
                .range((parent, entity(0))..)
                .take_while(|(p, _)| *p == parent)
                .count()
        })
    });
    group.finish();

    // Re-parenting moves a child between parents; the B-tree side keeps each child's
    // parent beside it, as the hash side does inside `Buckets`.
    const MOVES: usize = 10_000;
    let mut group = c.benchmark_group("relation_reparent_10k");
    size_group(&mut group, N);
    let mut rng = Rng::new(23);
    group.bench_function("hash_buckets", |b| {
        b.iter(|| {
            for _ in 0..MOVES {
                let child = rng.below(N as u64) as usize;
                buckets.insert(entity(child), entity(rng.below(N as u64) as usize));
            }
            buckets.len()
        })
    });
    let mut parent_of: Vec<usize> = parents.clone();
    let mut rng = Rng::new(23);
    group.bench_function("btree_pairs", |b| {
        b.iter(|| {
            for _ in 0..MOVES {
                let child = rng.below(N as u64) as usize;
                let parent = rng.below(N as u64) as usize;
                pairs.remove(&(entity(parent_of[child]), entity(child)));
                pairs.insert((entity(parent), entity(child)));
                parent_of[child] = parent;
            }
            pairs.len()
        })
    });
    group.finish();
}

criterion_group!(benches, points, relations);
criterion_main!(benches);
