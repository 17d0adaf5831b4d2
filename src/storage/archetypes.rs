//! The set of archetype tables: finding the table for a component set (by its XOR hash,
//! verified against the set itself, so collisions are detected rather than trusted), the
//! cached add/remove edges between tables, the per-component table lists the planner
//! filters, and dropping the tables of a dropped component. Row contents are `table/`'s.
//! The sparse components' tables (`sparse.rs`) are kept here too, under ids of their own
//! kind (`TableId::is_sparse`), so that a `TableId` finds any table; they are in no
//! component list, edge or name map, and `iter`/`len` count archetype tables only.

use hashbrown::HashMap;

use super::component::Components;
use super::ids::{ComponentId, TableId};
use super::sparse::SparseSet;
use super::table::{Table, TableName};

#[derive(Clone, Debug)]
pub(crate) struct Archetypes {
    /// Indexed by `TableId`; `tables[0]` is the void table.
    tables: Vec<Table>,
    /// Set hash -> the tables with that hash. More than one entry is a hash collision: the
    /// sets differ, and each table keeps its own (probed) name.
    by_set_hash: HashMap<u64, Vec<TableId>>,
    by_name: HashMap<TableName, TableId>,
    /// Per component id, the tables holding it, in creation order.
    by_component: Vec<Vec<TableId>>,
    /// The sparse components' tables, by `TableId::sparse_index`; `None` once dropped (a
    /// sparse table's id is not given again, but for the last one undone by ROLLBACK).
    sparse: Vec<Option<SparseSet>>,
}

impl Archetypes {
    pub fn new(catalog: &Components) -> Self {
        let mut archetypes = Archetypes {
            tables: Vec::new(),
            by_set_hash: HashMap::new(),
            by_name: HashMap::new(),
            by_component: Vec::new(),
            sparse: Vec::new(),
        };
        archetypes.create(Box::new([]), 0, catalog);
        archetypes
    }

    /// Any table: an archetype table or a sparse component's.
    #[inline]
    pub fn get(&self, id: TableId) -> Option<&Table> {
        match id.sparse_index() {
            Some(k) => self.sparse.get(k)?.as_ref().map(SparseSet::table),
            None => self.tables.get(id.index()),
        }
    }

    /// Any table, to write values in place. Rows of a sparse component's table are added
    /// and removed only through `sparse_mut`, which keeps its index in step.
    #[inline]
    pub fn get_mut(&mut self, id: TableId) -> Option<&mut Table> {
        match id.sparse_index() {
            Some(k) => self.sparse.get_mut(k)?.as_mut().map(SparseSet::table_mut),
            None => self.tables.get_mut(id.index()),
        }
    }

    /// The sparse set whose table is `id`.
    pub fn sparse(&self, id: TableId) -> Option<&SparseSet> {
        self.sparse.get(id.sparse_index()?)?.as_ref()
    }

    pub fn sparse_mut(&mut self, id: TableId) -> Option<&mut SparseSet> {
        self.sparse.get_mut(id.sparse_index()?)?.as_mut()
    }

    /// Every sparse set.
    pub fn sparse_sets(&self) -> impl Iterator<Item = &SparseSet> {
        self.sparse.iter().flatten()
    }

    /// Makes the table of sparse component `component` (existing in `catalog`).
    pub fn create_sparse(&mut self, component: ComponentId, catalog: &Components) -> Option<TableId> {
        let id = TableId::sparse(self.sparse.len())?;
        let hash = catalog.get(component).map_or(0, |c| c.hash());
        let table = Table::new(id, TableName(hash), hash, Box::new([component]), catalog);
        self.sparse.push(Some(SparseSet::new(table)));
        Some(id)
    }

    /// Leaves the sparse table numbers below `k` to dropped components, so that the next
    /// made is number `k` (a snapshot read back); false when `k` is already taken.
    pub fn skip_sparse_to(&mut self, k: usize) -> bool {
        if self.sparse.len() > k {
            return false;
        }
        self.sparse.resize_with(k, || None);
        true
    }

    /// Forgets the sparse table made last (undoing its component's declaration).
    pub fn remove_last_sparse(&mut self) {
        self.sparse.pop();
    }

    /// Drops the sparse table `id`, rows and all.
    pub fn drop_sparse(&mut self, id: TableId) {
        if let Some(slot) = id.sparse_index().and_then(|k| self.sparse.get_mut(k)) {
            *slot = None;
        }
    }

    /// Two distinct tables, both mutable (for moving rows between them).
    pub fn pair_mut(&mut self, a: TableId, b: TableId) -> Option<[&mut Table; 2]> {
        self.tables.get_disjoint_mut([a.index(), b.index()]).ok()
    }

    /// The tables `ids` (ascending, either kind; those missing skipped), all mutably at
    /// once, in that order.
    pub fn tables_mut(&mut self, ids: &[TableId]) -> Vec<&mut Table> {
        let mut out = Vec::with_capacity(ids.len());
        let mut wanted = ids
            .iter()
            .filter(|id| id.sparse_index().is_none())
            .map(|id| id.index())
            .peekable();
        for (i, table) in self.tables.iter_mut().enumerate() {
            while wanted.next_if(|&w| w < i).is_some() {}
            if wanted.next_if_eq(&i).is_some() {
                out.push(table);
            }
        }
        let mut wanted = ids.iter().filter_map(|id| id.sparse_index()).peekable();
        for (k, set) in self.sparse.iter_mut().enumerate() {
            while wanted.next_if(|&w| w < k).is_some() {}
            if wanted.next_if_eq(&k).is_some()
                && let Some(set) = set
            {
                out.push(set.table_mut());
            }
        }
        out
    }

    pub fn iter(&self) -> impl Iterator<Item = &Table> {
        self.tables.iter()
    }

    pub fn len(&self) -> usize {
        self.tables.len()
    }

    pub fn by_name(&self, name: TableName) -> Option<TableId> {
        self.by_name.get(&name).copied()
    }

    /// The tables holding `component`, in creation order.
    pub fn with_component(&self, component: ComponentId) -> &[TableId] {
        self.by_component
            .get(component.index())
            .map_or(&[], Vec::as_slice)
    }

    /// The table for exactly `components` (sorted, deduplicated, all existing), created if
    /// it does not exist yet.
    pub fn find_or_create(&mut self, components: &[ComponentId], catalog: &Components) -> &mut Table {
        let set_hash = set_hash(components, catalog);
        let id = match self.find(components, set_hash) {
            Some(id) => id,
            None => self.create(components.into(), set_hash, catalog),
        };
        &mut self.tables[id.index()]
    }

    /// The table `from` becomes with `component` added; cached as an edge.
    pub fn add_target(&mut self, from: TableId, component: ComponentId, catalog: &Components) -> TableId {
        self.target(from, component, catalog, true)
    }

    /// The table `from` becomes with `component` removed; cached as an edge.
    pub fn remove_target(&mut self, from: TableId, component: ComponentId, catalog: &Components) -> TableId {
        self.target(from, component, catalog, false)
    }

    fn target(&mut self, from: TableId, component: ComponentId, catalog: &Components, add: bool) -> TableId {
        let src = &self.tables[from.index()];
        let cached = if add { &src.add_edges } else { &src.remove_edges };
        if let Some(&to) = cached.get(&component) {
            return to;
        }
        let mut set = src.components().to_vec();
        match (set.binary_search(&component), add) {
            (Err(at), true) => set.insert(at, component),
            (Ok(at), false) => {
                set.remove(at);
            }
            // Adding a component already there, or removing one that is not: no move.
            _ => return from,
        }
        // XOR is its own inverse, so the destination's hash follows from the source's.
        let component_hash = catalog.get(component).map_or(0, |c| c.hash());
        let to_hash = src.set_hash() ^ component_hash;
        let to = match self.find(&set, to_hash) {
            Some(id) => id,
            None => self.create(set.into(), to_hash, catalog),
        };
        let src = &mut self.tables[from.index()];
        let edges = if add {
            &mut src.add_edges
        } else {
            &mut src.remove_edges
        };
        edges.insert(component, to);
        to
    }

    fn find(&self, components: &[ComponentId], set_hash: u64) -> Option<TableId> {
        self.by_set_hash
            .get(&set_hash)?
            .iter()
            .copied()
            .find(|&id| self.tables[id.index()].components() == components)
    }

    fn create(&mut self, components: Box<[ComponentId]>, set_hash: u64, catalog: &Components) -> TableId {
        let id = TableId(self.tables.len() as u32);
        // A name already taken means another set has this hash: probe to a free name, so
        // both tables stay addressable and neither is mistaken for the other.
        let mut name = TableName(set_hash);
        while self.by_name.contains_key(&name) {
            name = TableName(name.0.wrapping_add(1));
        }
        for &c in components.iter() {
            if self.by_component.len() <= c.index() {
                self.by_component.resize_with(c.index() + 1, Vec::new);
            }
            self.by_component[c.index()].push(id);
        }
        self.by_set_hash.entry(set_hash).or_default().push(id);
        self.by_name.insert(name, id);
        self.tables
            .push(Table::new(id, name, set_hash, components, catalog));
        id
    }

    /// Removes the table created last (an empty one, which a rolled-back transaction
    /// created), with every trace of it: its names, its place in the component lists, and
    /// the cached edges that lead to it.
    pub fn remove_last(&mut self) {
        let Some(table) = self.tables.pop() else {
            return;
        };
        let id = table.id();
        if let Some(ids) = self.by_set_hash.get_mut(&table.set_hash()) {
            ids.retain(|&t| t != id);
            if ids.is_empty() {
                self.by_set_hash.remove(&table.set_hash());
            }
        }
        self.by_name.remove(&table.name());
        for &c in table.components() {
            if let Some(list) = self.by_component.get_mut(c.index()) {
                list.retain(|&t| t != id);
            }
        }
        for other in &mut self.tables {
            other.add_edges.retain(|_, to| *to != id);
            other.remove_edges.retain(|_, to| *to != id);
        }
    }

    /// Removes every table holding `component` (the caller has emptied them) and renumbers
    /// the rest densely. Returns, per old table index, the new id (`None` for removed ones).
    pub fn remove_tables_with(&mut self, component: ComponentId) -> Vec<Option<TableId>> {
        let old = std::mem::take(&mut self.tables);
        let mut renumbered = Vec::with_capacity(old.len());
        self.by_set_hash.clear();
        self.by_name.clear();
        self.by_component.iter_mut().for_each(Vec::clear);
        for mut table in old {
            if table.contains(component) {
                renumbered.push(None);
                continue;
            }
            let id = TableId(self.tables.len() as u32);
            // Edges may point at removed tables or old numbers: drop the cache, it refills.
            table.renumber(id);
            for &c in table.components() {
                self.by_component[c.index()].push(id);
            }
            self.by_set_hash.entry(table.set_hash()).or_default().push(id);
            self.by_name.insert(table.name(), id);
            self.tables.push(table);
            renumbered.push(Some(id));
        }
        renumbered
    }
}

/// XOR of the components' stable hashes: independent of order, and one XOR away from the
/// hash of any set that differs by one component.
fn set_hash(components: &[ComponentId], catalog: &Components) -> u64 {
    components
        .iter()
        .filter_map(|&c| catalog.get(c).ok())
        .fold(0, |h, def| h ^ def.hash())
}
