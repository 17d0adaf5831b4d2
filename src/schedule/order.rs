//! The order systems run in: phases in their order; inside a phase, an order that keeps
//! every BEFORE/AFTER, ties broken by creation order (the smallest creation index that
//! may run next runs next). Nothing else — no id, no hash — enters it, so the same
//! schedule always runs in the same order.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// One system as the order sees it: its phase's position and the systems (by creation
/// index) it must run before.
pub(super) struct Node {
    pub phase: usize,
    pub before: Vec<usize>,
}

/// The run order of `nodes` (creation indexes), or the systems around a cycle, each
/// running before the next.
pub(super) fn run_order(nodes: &[Node]) -> Result<Vec<usize>, Vec<usize>> {
    let n = nodes.len();
    let mut waiting = vec![0usize; n];
    for node in nodes {
        for &b in &node.before {
            waiting[b] += 1;
        }
    }
    // Phases first, then creation order: a heap of (phase, index).
    let mut ready: BinaryHeap<Reverse<(usize, usize)>> = (0..n)
        .filter(|&i| waiting[i] == 0)
        .map(|i| Reverse((nodes[i].phase, i)))
        .collect();
    let mut order = Vec::with_capacity(n);
    while let Some(Reverse((_, i))) = ready.pop() {
        order.push(i);
        for &b in &nodes[i].before {
            waiting[b] -= 1;
            if waiting[b] == 0 {
                ready.push(Reverse((nodes[b].phase, b)));
            }
        }
    }
    if order.len() == n {
        return Ok(order);
    }
    Err(cycle(nodes, &waiting))
}

/// A cycle among the systems still waiting: walk their edges until one repeats.
fn cycle(nodes: &[Node], waiting: &[usize]) -> Vec<usize> {
    let Some(start) = (0..nodes.len()).find(|&i| waiting[i] > 0) else {
        return Vec::new();
    };
    let mut path = vec![start];
    let mut at = start;
    loop {
        // Every waiting system has a waiting system before it; follow an edge backwards.
        let Some(prev) = (0..nodes.len()).find(|&j| waiting[j] > 0 && nodes[j].before.contains(&at)) else {
            return path;
        };
        if let Some(pos) = path.iter().position(|&p| p == prev) {
            let mut cycle = path[pos..].to_vec();
            cycle.reverse();
            return cycle;
        }
        path.push(prev);
        at = prev;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(phase: usize, before: &[usize]) -> Node {
        Node {
            phase,
            before: before.to_vec(),
        }
    }

    #[test]
    fn phases_then_edges_then_creation_order() {
        // 0 and 1 in phase 1; 2 in phase 0; 3 in phase 1 before 0.
        let nodes = [node(1, &[]), node(1, &[]), node(0, &[]), node(1, &[0])];
        assert_eq!(run_order(&nodes), Ok(vec![2, 1, 3, 0]));
    }

    #[test]
    fn a_cycle_is_named_in_run_order() {
        // 0 before 1, 1 before 2, 2 before 0; 3 free.
        let nodes = [node(0, &[1]), node(0, &[2]), node(0, &[0]), node(0, &[])];
        let cycle = run_order(&nodes).unwrap_err();
        assert_eq!(cycle.len(), 3);
        for w in 0..3 {
            let (a, b) = (cycle[w], cycle[(w + 1) % 3]);
            assert!(nodes[a].before.contains(&b), "{cycle:?}");
        }
    }
}
