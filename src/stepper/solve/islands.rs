//! How the contacts of a problem split into independent LCPs (islands), where
//! an island's unknowns sit in the whole problem, and the frictionless start
//! of a cold solve.

use crate::lcp::{self, Lcp, LcpMatrix, LcpStatus, LemkeOptions, Principal};
use crate::model::Contact;
use crate::stepper::assembly::Layout;
use nalgebra::{DMatrix, DVector};
use rustc_hash::FxHashMap as HashMap;

/// The first friction row of each contact in (29).
pub(in crate::stepper) fn friction_starts(contacts: &[&Contact]) -> Vec<usize> {
    let mut starts = Vec::with_capacity(contacts.len());
    let mut row = 0;
    for c in contacts {
        starts.push(row);
        row += c.jacobian.friction_count();
    }
    starts
}

/// For each index of an island's LCP, its index in the whole problem's layout.
pub(super) fn global_indices(
    members: &[usize],
    contacts: &[&Contact],
    starts: &[usize],
    global: Layout,
) -> Vec<usize> {
    let mut out = Vec::new();
    // The island's friction rows are its contacts' in order, then its
    // normals, then its λ's.
    for &j in members {
        out.extend(starts[j]..starts[j] + contacts[j].jacobian.friction_count());
    }
    out.extend(members.iter().map(|&j| global.normal(j)));
    out.extend(members.iter().map(|&j| global.lambda(j)));
    out
}

/// The contacts grouped into islands: the connected components of the graph
/// whose vertices are the bodies' velocity blocks and whose edges are the
/// contacts (a contact with a static surface touches one block). Islands
/// come in the order of their first contact, contacts in their order.
pub fn islands(contacts: &[&Contact]) -> Vec<Vec<usize>> {
    let mut index: HashMap<usize, usize> = HashMap::default();
    let mut parent: Vec<usize> = Vec::new();
    fn find(parent: &mut [usize], mut x: usize) -> usize {
        while parent[x] != x {
            parent[x] = parent[parent[x]];
            x = parent[x];
        }
        x
    }
    let mut first_block = Vec::with_capacity(contacts.len());
    for c in contacts {
        let mut roots = Vec::with_capacity(2);
        for b in c.jacobian.blocks() {
            let id = *index.entry(b.start).or_insert_with(|| {
                parent.push(parent.len());
                parent.len() - 1
            });
            roots.push(id);
        }
        if let [a, b] = roots[..] {
            let (ra, rb) = (find(&mut parent, a), find(&mut parent, b));
            if ra != rb {
                parent[ra.max(rb)] = ra.min(rb);
            }
        }
        first_block.push(roots[0]);
    }
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut group_of: HashMap<usize, usize> = HashMap::default();
    for (j, &block) in first_block.iter().enumerate() {
        let root = find(&mut parent, block);
        let g = *group_of.entry(root).or_insert_with(|| {
            groups.push(Vec::new());
            groups.len() - 1
        });
        groups[g].push(j);
    }
    groups
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
    let options = LemkeOptions::default();
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
