//! How the contacts of a problem split into independent LCPs (islands), where
//! an island's unknowns sit in the whole problem, and the frictionless start
//! of a cold solve.

use super::contact_options;
use crate::lcp::{self, Lcp, LcpMatrix, LcpStatus, Principal};
use crate::model::Contact;
use crate::solver::problem::Layout;
use nalgebra::{DMatrix, DVector};
use rustc_hash::FxHashMap as HashMap;

/// For each index of an island's LCP, its index in the whole problem's
/// layout, into `out` (replaced).
pub(super) fn global_indices(
    members: &[usize],
    contacts: &[&Contact],
    starts: &[usize],
    global: Layout,
    out: &mut Vec<usize>,
) {
    out.clear();
    // The island's friction rows are its contacts' in order, then its
    // normals, then its λ's.
    for &j in members {
        out.extend(starts[j]..starts[j] + contacts[j].jacobian.friction_count());
    }
    out.extend(members.iter().map(|&j| global.normal(j)));
    out.extend(members.iter().map(|&j| global.lambda(j)));
}

/// The contacts grouped into islands: the connected components of the graph
/// whose vertices are the bodies' velocity blocks and whose edges are the
/// contacts (a contact with a static surface touches one block). Islands
/// come in the order of their first contact, contacts in their order.
pub fn islands(contacts: &[&Contact]) -> Vec<Vec<usize>> {
    let mut islands = Islands::default();
    islands.find(contacts);
    (0..islands.len())
        .map(|g| islands.get(g).to_vec())
        .collect()
}

/// [`islands`] kept in reused storage.
#[derive(Debug, Clone, Default)]
pub struct Islands {
    /// The islands' contacts (the first `count` lists).
    pub(super) groups: Vec<Vec<usize>>,
    pub(super) count: usize,
    /// Union–find over the velocity blocks: a block's node, each node's
    /// parent, each contact's first node, each root's island.
    pub(super) index: HashMap<usize, usize>,
    pub(super) parent: Vec<usize>,
    pub(super) first_block: Vec<usize>,
    pub(super) group_of: HashMap<usize, usize>,
}

impl Islands {
    /// Groups `contacts` ([`islands`]).
    pub fn find(&mut self, contacts: &[&Contact]) {
        fn find(parent: &mut [usize], mut x: usize) -> usize {
            while parent[x] != x {
                parent[x] = parent[parent[x]];
                x = parent[x];
            }
            x
        }
        let Self {
            groups,
            count,
            index,
            parent,
            first_block,
            group_of,
        } = self;
        index.clear();
        parent.clear();
        first_block.clear();
        for c in contacts {
            let mut roots = [0; 2];
            let blocks = c.jacobian.blocks();
            for (root, b) in roots.iter_mut().zip(blocks) {
                *root = *index.entry(b.start).or_insert_with(|| {
                    parent.push(parent.len());
                    parent.len() - 1
                });
            }
            if let [_, _] = blocks {
                let (ra, rb) = (find(parent, roots[0]), find(parent, roots[1]));
                if ra != rb {
                    parent[ra.max(rb)] = ra.min(rb);
                }
            }
            first_block.push(roots[0]);
        }
        *count = 0;
        group_of.clear();
        for (j, &block) in first_block.iter().enumerate() {
            let root = find(parent, block);
            let g = *group_of.entry(root).or_insert_with(|| {
                if groups.len() == *count {
                    groups.push(Vec::new());
                }
                groups[*count].clear();
                *count += 1;
                *count - 1
            });
            groups[g].push(j);
        }
    }

    /// Number of islands.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Island g's contacts.
    pub fn get(&self, g: usize) -> &[usize] {
        &self.groups[g]
    }
}

/// The basis of the frictionless LCP (ñᵀWñ c̃_n + q_n ≥ 0 ⊥ c̃_n ≥ 0, the c̃_n
/// block of (29) with β̃ = 0) as indices of (29): the normals that push.
/// `None` when it is not solved or no normal pushes.
pub(super) fn frictionless_basis<M: LcpMatrix + ?Sized>(
    m: &M,
    q: &DVector<f64>,
    layout: Layout,
    structured: bool,
) -> Option<Vec<usize>> {
    let (start, p) = (layout.friction, layout.contacts);
    if p == 0 {
        return None;
    }
    let indices: Vec<usize> = (start..start + p).collect();
    let q_n = q.rows(start, p).into_owned();
    let options = contact_options();
    let solution = if structured {
        lcp::solve_structured(&Principal::new(m, indices), &q_n, &options)
    } else {
        let dense = DMatrix::from_fn(p, p, |i, j| m.entry(start + i, start + j));
        lcp::solve(&Lcp { m: dense, q: q_n }, &options)
    }
    .ok()?;
    (solution.status == LcpStatus::Solved && !solution.basis.is_empty())
        .then(|| solution.basis.iter().map(|&i| start + i).collect())
}
