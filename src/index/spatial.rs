//! The spatial index's structure: a uniform grid of cubic cells over 2D or 3D points,
//! each cell a bucket of entities (`Buckets`), each entity's point kept beside it. Moving
//! a point within its cell rewrites the point; moving it across cells is a swap-remove
//! and a push. Queries visit the cells a sphere's or a box's bounds cover, or every
//! occupied cell when that is fewer.
//!
//! Every query returns a superset of the exact answer (bounds widened by a relative
//! 1e-9, points whose coordinates are not finite always included): the scan's own
//! filter then decides each candidate, so an index never changes a result. Which SQL the
//! grid serves is decided in `plan/`; reading points from tables is `mod.rs`'s job.

use std::collections::BinaryHeap;

use super::buckets::Buckets;
use crate::storage::{Entity, SlotMap};

/// A point of 2 or 3 coordinates (the third is 0 in 2 dimensions).
pub type Point = [f64; 3];
type Cell = [i32; 3];

/// The cell of every point with a coordinate that is NaN or infinite.
const NOWHERE: Cell = [i32::MIN; 3];

/// How many points a cell holds on average after tuning; see docs/architecture.md for
/// the measurements behind it.
const POINTS_PER_CELL: f64 = 16.0;

/// Re-tune the cell size when the grid has grown to twice the size it was tuned for
/// (but not below this many points, where any cell size is fast).
const RETUNE_FLOOR: usize = 1024;

/// Widening applied to every search bound, so that rounding in the filter's own
/// arithmetic never makes it accept a point the grid skipped.
const SLACK: f64 = 1e-9;

/// A uniform grid of cells over the points of entities, for searches within a radius, a
/// box or the k nearest.
#[derive(Clone, Debug)]
pub struct Grid {
    dims: usize,
    /// Points per cell that `retune` aims for.
    per_cell: f64,
    cell: f64,
    cells: Buckets<Cell>,
    /// Indexed by entity slot; meaningful where `cells` holds the entity.
    points: SlotMap<Point>,
    tuned_for: usize,
}

impl Grid {
    /// An empty grid over points of `dims` coordinates.
    pub fn new(dims: usize) -> Grid {
        Grid::with_density(dims, POINTS_PER_CELL)
    }

    /// A grid whose cells are sized to hold `per_cell` points on average: what the
    /// structure bench varies to choose `POINTS_PER_CELL`.
    pub fn with_density(dims: usize, per_cell: f64) -> Grid {
        Grid {
            dims,
            per_cell,
            cell: 1.0,
            cells: Buckets::default(),
            points: SlotMap::default(),
            tuned_for: 0,
        }
    }

    /// The number of points.
    pub fn len(&self) -> usize {
        self.cells.len()
    }

    /// True when there is no point.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The side of a cell.
    pub fn cell_size(&self) -> f64 {
        self.cell
    }

    /// Puts `entity` at `point`, wherever it was before.
    pub fn insert(&mut self, entity: Entity, point: Point) {
        self.points.insert(entity.slot(), point);
        self.cells.insert(entity, self.cell_of(point));
        if self.len() >= RETUNE_FLOOR && self.len() > 2 * self.tuned_for {
            self.retune();
        }
    }

    /// Forgets `entity`'s point.
    pub fn remove(&mut self, entity: Entity) {
        self.cells.remove(entity);
        self.points.remove(entity.slot());
    }

    /// True when `entity` has a point here.
    pub fn contains(&self, entity: Entity) -> bool {
        self.cells.key_of(entity).is_some()
    }

    /// `entity`'s point.
    pub fn point(&self, entity: Entity) -> Option<Point> {
        self.contains(entity).then(|| self.point_of(entity))
    }

    /// The point filed for `entity` (the origin if none is: callers ask only for entities
    /// found in the cells).
    #[inline]
    fn point_of(&self, entity: Entity) -> Point {
        self.points.get(entity.slot()).copied().unwrap_or([0.0; 3])
    }

    /// Picks the cell size for the points held now (about `POINTS_PER_CELL` per cell
    /// over their bounding box) and re-files every point.
    pub fn retune(&mut self) {
        let entries: Vec<(Entity, Point)> = self
            .cells
            .iter()
            .flat_map(|(_, es)| es.iter().map(|&e| (e, self.point_of(e))))
            .collect();
        let mut lo = [f64::INFINITY; 3];
        let mut hi = [f64::NEG_INFINITY; 3];
        let mut finite = 0usize;
        for (_, p) in &entries {
            if self.is_finite(p) {
                finite += 1;
                for d in 0..self.dims {
                    lo[d] = lo[d].min(p[d]);
                    hi[d] = hi[d].max(p[d]);
                }
            }
        }
        // Axes along which every point lies flat (a 2D world in a 3D index) do not count:
        // the cell is sized for the axes the points spread over.
        let spread: Vec<f64> = (0..self.dims)
            .map(|d| hi[d] - lo[d])
            .filter(|w| *w > 0.0 && w.is_finite())
            .collect();
        if finite > 0 && !spread.is_empty() {
            let volume: f64 = spread.iter().product();
            let cell = (volume * self.per_cell / finite as f64).powf(1.0 / spread.len() as f64);
            if cell.is_finite() && cell > 0.0 {
                self.cell = cell;
            }
        }
        self.cells.clear();
        for (e, p) in &entries {
            self.cells.insert(*e, self.cell_of(*p));
        }
        self.tuned_for = entries.len();
    }

    /// Candidates for `distance(point, center) <= radius` (and `<`), appended to `out`;
    /// false, appending no more, once `out` would hold more than `limit` (counted from
    /// the cells' sizes, before any point is read).
    pub fn within(&self, center: Point, radius: f64, limit: usize, out: &mut Vec<Entity>) -> bool {
        self.push_nowhere(out);
        self.within_finite(center, radius, limit, out)
    }

    /// `within` without the points of no place (a coordinate NaN or infinite): the
    /// candidates of a k-nearest search, where such a point, whose distance is NaN,
    /// sorts after every other and must not stand in for one nearer (a search that
    /// finds fewer than k walks every row, those points included).
    pub fn within_finite(&self, center: Point, radius: f64, limit: usize, out: &mut Vec<Entity>) -> bool {
        if radius.is_nan() {
            return out.len() <= limit;
        }
        if radius == f64::INFINITY {
            if self.len() > limit {
                return false;
            }
            self.push_all_finite(out);
            return true;
        }
        if !self.is_finite(&center) {
            return out.len() <= limit;
        }
        let r = radius.max(0.0) * (1.0 + SLACK) + f64::MIN_POSITIVE;
        let r2 = r * r * (1.0 + SLACK);
        let lo = center.map(|c| c - r);
        let hi = center.map(|c| c + r);
        // Cells of the sphere's bounding cube that the sphere misses (its corners) are
        // skipped without reading their points. Each cell is taken a thousandth wider on
        // every side, more than rounding in `coordinate` can misplace a point; the
        // clamped outermost cells hold points of any distance and are always read.
        let reaches = |cell: &Cell| {
            let gap2: f64 = (0..self.dims)
                .map(|d| {
                    if cell[d] == i32::MAX || cell[d] == i32::MIN + 1 {
                        return 0.0;
                    }
                    let from = (cell[d] as f64 - 1e-3) * self.cell;
                    let to = (cell[d] as f64 + 1.0 + 1e-3) * self.cell;
                    let gap = (from - center[d]).max(center[d] - to).max(0.0);
                    gap * gap
                })
                .sum();
            gap2 <= r2
        };
        if !self.at_most(lo, hi, reaches, limit.saturating_sub(out.len())) {
            return false;
        }
        self.visit_box(lo, hi, reaches, |e, p| {
            if self.distance2(p, &center) <= r2 {
                out.push(e);
            }
        });
        true
    }

    /// Candidates for a box: each axis between `lo` and `hi`, inclusive (pass infinities
    /// for an axis without a bound), appended to `out`; false, appending no more, once
    /// `out` would hold more than `limit` (counted from the cells' sizes).
    pub fn in_box(&self, lo: Point, hi: Point, limit: usize, out: &mut Vec<Entity>) -> bool {
        self.push_nowhere(out);
        if lo[..self.dims].iter().chain(&hi[..self.dims]).any(|b| b.is_nan()) {
            return out.len() <= limit;
        }
        let lo = lo.map(|b| b - b.abs() * SLACK);
        let hi = hi.map(|b| b + b.abs() * SLACK);
        if !self.at_most(lo, hi, |_| true, limit.saturating_sub(out.len())) {
            return false;
        }
        self.visit_box(
            lo,
            hi,
            |_| true,
            |e, p| {
                if (0..self.dims).all(|d| lo[d] <= p[d] && p[d] <= hi[d]) {
                    out.push(e);
                }
            },
        );
        true
    }

    /// The distance within which the `k` points nearest `center` lie, found by searching
    /// rings of cells outward. `None` when every point must be considered (no more than
    /// `k` finite points, or a center that is not finite).
    pub fn kth_distance(&self, center: Point, k: usize) -> Option<f64> {
        let nowhere = self.cells.get(&NOWHERE).len();
        if k == 0 {
            return Some(f64::NEG_INFINITY);
        }
        if self.len() - nowhere <= k || !self.is_finite(&center) {
            return None;
        }
        let mut best: BinaryHeap<Distance> = BinaryHeap::with_capacity(k + 1);
        let offer = |best: &mut BinaryHeap<Distance>, d2: f64| {
            if best.len() < k {
                best.push(Distance(d2));
            } else if best.peek().is_some_and(|top| d2 < top.0) {
                best.pop();
                best.push(Distance(d2));
            }
        };
        let home = self.cell_of(center);
        for ring in 0i64.. {
            let side = (2 * ring + 1) as f64;
            if side.powi(self.dims as i32) > 2.0 * self.cells.bucket_count() as f64 {
                // The rings would visit more cells than exist: look at every point.
                best.clear();
                for (&cell, es) in self.cells.iter() {
                    if cell != NOWHERE {
                        for &e in es {
                            offer(&mut best, self.distance2(&self.point_of(e), &center));
                        }
                    }
                }
                break;
            }
            self.visit_ring(home, ring, |_, p| offer(&mut best, self.distance2(p, &center)));
            if best.len() == k {
                // Points outside the rings so far are at least this far from the center.
                let reach = (0..self.dims)
                    .map(|d| {
                        let below = center[d] - (home[d] as f64 - ring as f64) * self.cell;
                        let above = (home[d] as f64 + ring as f64 + 1.0) * self.cell - center[d];
                        below.min(above)
                    })
                    .fold(f64::INFINITY, f64::min);
                if best.peek().is_some_and(|top| top.0 <= reach * reach) {
                    break;
                }
            }
        }
        best.peek().map(|top| top.0.sqrt())
    }

    // ---- internals ----------------------------------------------------------------------

    fn is_finite(&self, p: &Point) -> bool {
        p[..self.dims].iter().all(|c| c.is_finite())
    }

    fn distance2(&self, a: &Point, b: &Point) -> f64 {
        (0..self.dims).map(|d| (a[d] - b[d]) * (a[d] - b[d])).sum()
    }

    fn coordinate(&self, x: f64) -> i32 {
        // Clamped, so far-away points share the outermost cells rather than wrap; the
        // mapping stays monotonic, which is all a search needs.
        (x / self.cell)
            .floor()
            .clamp(i32::MIN as f64 + 1.0, i32::MAX as f64) as i32
    }

    fn cell_of(&self, p: Point) -> Cell {
        if !self.is_finite(&p) {
            return NOWHERE;
        }
        let mut cell = [0; 3];
        for d in 0..self.dims {
            cell[d] = self.coordinate(p[d]);
        }
        cell
    }

    fn push_nowhere(&self, out: &mut Vec<Entity>) {
        out.extend_from_slice(self.cells.get(&NOWHERE));
    }

    fn push_all_finite(&self, out: &mut Vec<Entity>) {
        for (&cell, es) in self.cells.iter() {
            if cell != NOWHERE {
                out.extend_from_slice(es);
            }
        }
    }

    /// Calls `f` for every point in a cell that overlaps the box `lo..=hi` and that
    /// `keep` accepts.
    fn visit_box(
        &self,
        lo: Point,
        hi: Point,
        keep: impl Fn(&Cell) -> bool,
        mut f: impl FnMut(Entity, &Point),
    ) {
        self.visit_cells(lo, hi, keep, |es| {
            for &e in es {
                f(e, &self.point_of(e));
            }
            true
        });
    }

    /// Whether the cells `visit_box` would read hold at most `limit` points: a count of
    /// what a search may find, from the cells' sizes alone.
    fn at_most(&self, lo: Point, hi: Point, keep: impl Fn(&Cell) -> bool, limit: usize) -> bool {
        if limit >= self.len() {
            return true;
        }
        let mut held = 0usize;
        self.visit_cells(lo, hi, keep, |es| {
            held += es.len();
            held <= limit
        })
    }

    /// Calls `f` with the points of every cell that overlaps the box `lo..=hi` and that
    /// `keep` accepts, until `f` answers false; false when it did.
    fn visit_cells(
        &self,
        lo: Point,
        hi: Point,
        keep: impl Fn(&Cell) -> bool,
        mut f: impl FnMut(&[Entity]) -> bool,
    ) -> bool {
        let mut from = [0i64; 3];
        let mut to = [0i64; 3];
        let mut cells = 1f64;
        for d in 0..self.dims {
            from[d] = self.coordinate(lo[d]) as i64;
            to[d] = self.coordinate(hi[d]) as i64;
            cells *= (to[d] - from[d] + 1).max(0) as f64;
        }
        if cells > self.cells.bucket_count() as f64 {
            for (&cell, es) in self.cells.iter() {
                let inside = (0..self.dims).all(|d| from[d] <= cell[d] as i64 && cell[d] as i64 <= to[d]);
                if inside && cell != NOWHERE && keep(&cell) && !f(es) {
                    return false;
                }
            }
            return true;
        }
        let mut cell = [0i32; 3];
        for x in from[0]..=to[0] {
            cell[0] = x as i32;
            for y in from[1]..=to[1] {
                cell[1] = y as i32;
                for z in from[2]..=to[2] {
                    cell[2] = z as i32;
                    if keep(&cell) && !f(self.cells.get(&cell)) {
                        return false;
                    }
                }
            }
        }
        true
    }

    /// Calls `f` for every point in the cells at Chebyshev distance exactly `ring` from
    /// `home`.
    fn visit_ring(&self, home: Cell, ring: i64, mut f: impl FnMut(Entity, &Point)) {
        let span = |d: usize| if d < self.dims { -ring..=ring } else { 0..=0 };
        for x in span(0) {
            for y in span(1) {
                for z in span(2) {
                    if x.abs().max(y.abs()).max(z.abs()) != ring {
                        continue;
                    }
                    // Past the clamped edge there are no cells (and NOWHERE is not one).
                    let at = |h: i32, o: i64| i32::try_from(h as i64 + o).ok().filter(|&c| c != i32::MIN);
                    let (Some(cx), Some(cy), Some(cz)) = (at(home[0], x), at(home[1], y), at(home[2], z))
                    else {
                        continue;
                    };
                    for &e in self.cells.get(&[cx, cy, cz]) {
                        f(e, &self.point_of(e));
                    }
                }
            }
        }
    }
}

/// A squared distance ordered for the max-heap of the k best (never NaN: finite points
/// and center).
#[derive(Clone, Copy, PartialEq)]
struct Distance(f64);

impl Eq for Distance {}

impl PartialOrd for Distance {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Distance {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 2D grid of 100 × 100 points on the unit lattice.
    fn lattice() -> Grid {
        let mut g = Grid::with_density(2, 4.0);
        let mut n = 0;
        for x in 0..100 {
            for y in 0..100 {
                n += 1;
                g.insert(Entity::from_bits(n).expect("non-zero"), [x as f64, y as f64, 0.0]);
            }
        }
        g
    }

    #[test]
    fn a_search_past_its_limit_gives_up_before_reading_points() {
        let g = lattice();
        let mut all = Vec::new();
        assert!(g.within([50.0, 50.0, 0.0], 5.0, usize::MAX, &mut all));
        let found = all.len();
        assert!(found >= 81, "the 81 points within 5 at least: {found}");
        // Given room for what the cells hold, the search finds the same points.
        let mut out = Vec::new();
        assert!(g.within([50.0, 50.0, 0.0], 5.0, 10_000, &mut out));
        assert_eq!(out.len(), found);
        // Given room for fewer, it gives up and appends nothing.
        let mut out = Vec::new();
        assert!(!g.within([50.0, 50.0, 0.0], 5.0, 20, &mut out));
        assert!(out.is_empty());
        let mut out = Vec::new();
        assert!(!g.in_box([0.0, 0.0, 0.0], [99.0, 99.0, 0.0], 100, &mut out));
        assert!(out.is_empty());
        assert!(g.in_box([0.0, 0.0, 0.0], [2.0, 2.0, 0.0], 10_000, &mut out));
        assert_eq!(out.len(), 9);
        assert!(!g.within([0.0; 3], f64::INFINITY, 9_999, &mut Vec::new()));
    }
}
