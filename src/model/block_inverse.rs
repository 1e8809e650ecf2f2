//! A generalized inverse W kept per connected component of the coupling
//! pattern, as Anitescu–Potra's W = M̂⁻¹ − M̂⁻¹ν S⁺ νᵀM̂⁻¹ (Theorem 2.1) is
//! block-diagonal over the groups of velocities that M̂ (32) and the joint
//! rows ν (13) couple.
//!
//! M̂ = M + h K_c + h δ ∇ψ∇ψᵀ + h² γ ∇φ∇φᵀ couples two velocities only
//! through a body's own mass and gyroscopic block or a spring or damper
//! between them, and ν only the bodies of one joint. Permuted by its
//! components, M̂ is block-diagonal, and so are its inverse and the Schur
//! complement of the joints: W is the direct sum of the components' own W.
//! Each component is inverted densely — W of a connected component is dense
//! in general (the inverse of an irreducible matrix has no zero pattern to
//! keep), and the LCP (24) needs its entries between every two contacts of
//! the component — so the cost is Σ g³ over components of g velocities
//! instead of dof³, and JᵀWJ pairs only contacts on a shared component.
//! A pile of free bodies has components of one velocity (a diagonal mass)
//! or of a spinning body's three rotations; a chain of joints is one
//! component, as dense as before.

use nalgebra::{DMatrix, DVector};

/// W on one component: its velocity indices (ascending) and W on them.
#[derive(Debug, Clone)]
pub struct Component {
    /// The velocity indices, ascending.
    pub velocities: Vec<usize>,
    /// W restricted to them (g × g, not necessarily symmetric: the gyroscopic
    /// K_c is antisymmetric).
    pub w: DMatrix<f64>,
}

/// W block-diagonal over components (see the module).
#[derive(Debug, Clone, Default)]
pub struct BlockInverse {
    components: Vec<Component>,
    /// Per velocity index: (component, position within it).
    place: Vec<(usize, usize)>,
}

impl BlockInverse {
    /// The velocity groups of the pattern of `m_hat` (i and j together when
    /// M̂ᵢⱼ or M̂ⱼᵢ is nonzero) and of the joint columns `nu` (the velocities
    /// a column touches together), each ascending, ordered by their first
    /// velocity.
    pub fn components(m_hat: &DMatrix<f64>, nu: &DMatrix<f64>) -> Vec<Vec<usize>> {
        let n = m_hat.nrows();
        let mut sets = DisjointSets::new(n);
        for j in 0..n {
            for i in 0..n {
                if i != j && m_hat[(i, j)] != 0.0 {
                    sets.join(i, j);
                }
            }
        }
        for column in nu.column_iter() {
            let mut touched = column.iter().enumerate().filter(|(_, x)| **x != 0.0);
            if let Some((first, _)) = touched.next() {
                for (i, _) in touched {
                    sets.join(first, i);
                }
            }
        }
        sets.groups()
    }

    /// W from each component's own W (`components` partition 0..dof).
    pub fn new(dof: usize, components: Vec<Component>) -> Self {
        let mut place = vec![(usize::MAX, 0); dof];
        for (g, c) in components.iter().enumerate() {
            for (p, &i) in c.velocities.iter().enumerate() {
                place[i] = (g, p);
            }
        }
        Self { components, place }
    }

    /// The components.
    pub fn components_of(&self) -> &[Component] {
        &self.components
    }

    /// (component, position in it) of velocity `i`.
    pub fn place(&self, i: usize) -> (usize, usize) {
        self.place[i]
    }

    /// The number of velocities.
    pub fn dof(&self) -> usize {
        self.place.len()
    }

    /// W x.
    pub fn apply(&self, x: &DVector<f64>) -> DVector<f64> {
        let mut out = DVector::zeros(x.len());
        for c in &self.components {
            for (a, &i) in c.velocities.iter().enumerate() {
                out[i] = c
                    .velocities
                    .iter()
                    .enumerate()
                    .map(|(b, &k)| c.w[(a, b)] * x[k])
                    .sum();
            }
        }
        out
    }

    /// W as a dense dof × dof matrix (tests, the recorded LCP).
    pub fn to_dense(&self) -> DMatrix<f64> {
        let mut out = DMatrix::zeros(self.dof(), self.dof());
        for c in &self.components {
            for (a, &i) in c.velocities.iter().enumerate() {
                for (b, &k) in c.velocities.iter().enumerate() {
                    out[(i, k)] = c.w[(a, b)];
                }
            }
        }
        out
    }
}

/// Disjoint sets of 0..n (union by smaller root, path halving): the
/// components of W here, the independent parts of the LCP (24) in
/// the dense contact assembly (`Impulses::parts` of the solver layer).
pub(crate) struct DisjointSets {
    parent: Vec<usize>,
}

impl DisjointSets {
    /// n singletons.
    pub(crate) fn new(n: usize) -> Self {
        Self {
            parent: (0..n).collect(),
        }
    }

    fn root(&mut self, mut i: usize) -> usize {
        while self.parent[i] != i {
            self.parent[i] = self.parent[self.parent[i]];
            i = self.parent[i];
        }
        i
    }

    /// Puts a and b in one set.
    pub(crate) fn join(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.root(a), self.root(b));
        self.parent[ra.max(rb)] = ra.min(rb);
    }

    /// The sets, each ascending, ordered by their smallest element.
    pub(crate) fn groups(mut self) -> Vec<Vec<usize>> {
        let n = self.parent.len();
        let mut index_of_root = vec![usize::MAX; n];
        let mut groups: Vec<Vec<usize>> = Vec::new();
        for i in 0..n {
            let r = self.root(i);
            if index_of_root[r] == usize::MAX {
                index_of_root[r] = groups.len();
                groups.push(Vec::new());
            }
            groups[index_of_root[r]].push(i);
        }
        groups
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_follow_the_pattern_and_the_joint_columns() {
        // Velocities 0–1 coupled in M̂, 2 alone, 3 and 4 joined by a column.
        let mut m = DMatrix::identity(5, 5);
        m[(0, 1)] = 0.5;
        let mut nu = DMatrix::zeros(5, 1);
        nu[(3, 0)] = 1.0;
        nu[(4, 0)] = -1.0;
        let groups = BlockInverse::components(&m, &nu);
        assert_eq!(groups, vec![vec![0, 1], vec![2], vec![3, 4]]);
        // W block by block equals the dense inverse.
        let components = groups
            .into_iter()
            .map(|velocities| {
                let g = velocities.len();
                let block = DMatrix::from_fn(g, g, |a, b| m[(velocities[a], velocities[b])]);
                Component {
                    w: block.try_inverse().unwrap_or_else(|| panic!("invertible")),
                    velocities,
                }
            })
            .collect();
        let w = BlockInverse::new(5, components);
        let dense = m
            .clone()
            .try_inverse()
            .unwrap_or_else(|| panic!("invertible"));
        assert!((w.to_dense() - &dense).amax() < 1e-15);
        let x = DVector::from_fn(5, |i, _| i as f64 - 1.5);
        assert!((w.apply(&x) - dense * x).amax() < 1e-15);
    }
}
