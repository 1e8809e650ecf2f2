//! The LCP (29) of Stewart & Trinkle 1996 for p contacts, shared by the steppers
//! that use the polyhedral friction pyramid.
//!
//! Unknowns z = (β̃, c̃_n, λ̃), slacks w = (ρ̃, σ̃, ζ̃):
//!
//! ```text
//! ⎡ D̃ᵀM⁻¹D̃   D̃ᵀM⁻¹ñ   Ẽ ⎤ ⎡β̃  ⎤   ⎡ D̃ᵀ v*        ⎤
//! ⎢ ñᵀM⁻¹D̃   ñᵀM⁻¹ñ   0 ⎥ ⎢c̃_n⎥ + ⎢ ñᵀ v* + γ̃/h   ⎥ = w ≥ 0,  z ≥ 0,  zᵀw = 0
//! ⎣ −Ẽᵀ       μ̃        0 ⎦ ⎣λ̃  ⎦   ⎣ 0             ⎦
//! ```
//!
//! with v* = v + h M⁻¹k the velocity without contact impulses and γ̃ the gap
//! term per contact (for Stewart–Trinkle (ñᵀqˡ − α̃₀), for velocity-level schemes
//! zero or a restitution term).

use crate::lcp::Lcp;
use crate::model::{Contact, ContactJacobian, MassInverse};
use nalgebra::{DMatrix, DVector};

/// The block layout of the assembled LCP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Number of contacts p.
    pub contacts: usize,
    /// Total friction directions Σ k_j (the β block size).
    pub friction: usize,
}

impl Layout {
    /// The layout of these contacts' LCP.
    pub fn of(contacts: &[&Contact]) -> Self {
        Self {
            contacts: contacts.len(),
            friction: contacts.iter().map(|c| c.jacobian.friction_count()).sum(),
        }
    }
    /// LCP size Σk + 2p.
    pub fn size(&self) -> usize {
        self.friction + 2 * self.contacts
    }
    /// The indices of the normal impulses c̃_n.
    pub fn normals(&self) -> std::ops::Range<usize> {
        self.friction..self.friction + self.contacts
    }
    /// Index of c_n of contact j.
    pub fn normal(&self, j: usize) -> usize {
        self.friction + j
    }
    /// Index of λ of contact j.
    pub fn lambda(&self, j: usize) -> usize {
        self.friction + self.contacts + j
    }
}

/// The contacts' generalized impulse directions J = [D̃ ñ] (β columns first,
/// then normals) and the map W from generalized impulse to velocity change
/// (M⁻¹, or the joints' Schur complement of Anitescu–Potra).
///
/// With a diagonal W (rigid bodies) nothing of size dof × (LCP size) is
/// formed: the Delassus matrix JᵀWJ is assembled from the contacts' body
/// blocks, pairing only contacts that share a body, and impulses are applied
/// per block.
pub struct Impulses<'a> {
    /// Block layout.
    pub layout: Layout,
    contacts: Vec<&'a ContactJacobian>,
    /// Column of the first friction direction of each contact.
    first_beta: Vec<usize>,
    map: Map,
    dof: usize,
}

enum Map {
    /// W per velocity, and for each velocity block start the contacts touching it.
    Diagonal {
        w: DVector<f64>,
        touching: std::collections::BTreeMap<usize, Vec<usize>>,
    },
    /// Dense J and WJ (linear systems, coupled steppers).
    Dense {
        jacobian: DMatrix<f64>,
        w_jacobian: DMatrix<f64>,
    },
}

impl<'a> Impulses<'a> {
    /// Collects the contacts' directions with W = `map`.
    pub fn new(contacts: &[&'a Contact], map: MassInverse<'_>, dof: usize) -> Self {
        let layout = Layout::of(contacts);
        let jacobians: Vec<&ContactJacobian> = contacts.iter().map(|c| &c.jacobian).collect();
        let mut first_beta = Vec::with_capacity(contacts.len());
        let mut col = 0;
        for c in &jacobians {
            first_beta.push(col);
            col += c.friction_count();
        }
        let map = match map {
            MassInverse::Diagonal(w) => {
                let mut touching: std::collections::BTreeMap<usize, Vec<usize>> =
                    std::collections::BTreeMap::new();
                for (j, c) in jacobians.iter().enumerate() {
                    for b in c.blocks() {
                        touching.entry(b.start).or_default().push(j);
                    }
                }
                Map::Diagonal {
                    w: w.clone(),
                    touching,
                }
            }
            MassInverse::Dense(w) => {
                let mut jacobian = DMatrix::zeros(dof, layout.friction + layout.contacts);
                for (j, c) in jacobians.iter().enumerate() {
                    for i in 0..c.friction_count() {
                        jacobian.set_column(first_beta[j] + i, &c.dense_direction(i, dof));
                    }
                    jacobian.set_column(layout.friction + j, &c.dense_normal(dof));
                }
                let w_jacobian = w * &jacobian;
                Map::Dense {
                    jacobian,
                    w_jacobian,
                }
            }
        };
        Self {
            layout,
            contacts: jacobians,
            first_beta,
            map,
            dof,
        }
    }

    /// The LCP column of row r (0: normal, i ≥ 1: friction direction i − 1)
    /// of contact j.
    fn column(&self, j: usize, r: usize) -> usize {
        if r == 0 {
            self.layout.normal(j)
        } else {
            self.first_beta[j] + r - 1
        }
    }

    /// The Delassus matrix JᵀWJ (the symmetric (β̃, c̃_n) block of (29)).
    pub fn delassus(&self) -> DMatrix<f64> {
        let n = self.layout.friction + self.layout.contacts;
        match &self.map {
            Map::Dense {
                jacobian,
                w_jacobian,
            } => jacobian.tr_mul(w_jacobian),
            Map::Diagonal { w, touching } => {
                let mut m = DMatrix::zeros(n, n);
                let w = w.as_slice();
                let mut pairs: Vec<(usize, usize)> = Vec::new();
                for list in touching.values() {
                    for (x, &a) in list.iter().enumerate() {
                        for &b in &list[x..] {
                            pairs.push((a.min(b), a.max(b)));
                        }
                    }
                }
                // Two contacts between the same two bodies share both blocks.
                pairs.sort_unstable();
                pairs.dedup();
                for (a, b) in pairs {
                    let (ca, cb) = (self.contacts[a], self.contacts[b]);
                    for r in 0..=ca.friction_count() {
                        for s in 0..=cb.friction_count() {
                            let value = ca.coupling(r, cb, s, w);
                            let (i, k) = (self.column(a, r), self.column(b, s));
                            m[(i, k)] = value;
                            m[(k, i)] = value;
                        }
                    }
                }
                m
            }
        }
    }

    /// Jᵀx for a generalized vector x: (D̃ᵀx, ñᵀx).
    pub fn transpose_times(&self, x: &DVector<f64>) -> DVector<f64> {
        let mut out = DVector::zeros(self.layout.friction + self.layout.contacts);
        for (j, c) in self.contacts.iter().enumerate() {
            for r in 0..=c.friction_count() {
                out[self.column(j, r)] = c.dot(r, x);
            }
        }
        out
    }

    /// The LCP (29): `free` is v* = v + h M⁻¹k, `gap_terms` the γ̃/h per contact,
    /// `mu` the friction coefficient per contact.
    pub fn lcp(&self, free: &DVector<f64>, gap_terms: &[f64], mu: &[f64]) -> Lcp {
        let layout = self.layout;
        let (nb, p) = (layout.friction, layout.contacts);
        let size = layout.size();
        let mut m = DMatrix::zeros(size, size);
        m.view_mut((0, 0), (nb + p, nb + p))
            .copy_from(&self.delassus());
        for (j, c) in self.contacts.iter().enumerate() {
            for i in 0..c.friction_count() {
                let row = self.first_beta[j] + i;
                m[(row, layout.lambda(j))] = 1.0; // Ẽ
                m[(layout.lambda(j), row)] = -1.0; // −Ẽᵀ
            }
            m[(layout.lambda(j), layout.normal(j))] = mu[j]; // μ̃
        }
        let mut q = DVector::zeros(size);
        q.rows_mut(0, nb + p).copy_from(&self.transpose_times(free));
        for j in 0..p {
            q[layout.normal(j)] += gap_terms[j];
        }
        Lcp { m, q }
    }

    /// The generalized impulse J z = D̃β̃ + ñc̃_n of a solution z.
    pub fn impulse(&self, z: &DVector<f64>) -> DVector<f64> {
        let mut out = DVector::zeros(self.dof);
        for (j, c) in self.contacts.iter().enumerate() {
            for r in 0..=c.friction_count() {
                let value = z[self.column(j, r)];
                if value != 0.0 {
                    c.add_row(r, value, &mut out);
                }
            }
        }
        out
    }

    /// The velocity change W(D̃β̃ + ñc̃_n) for a solution z.
    pub fn velocity_change(&self, z: &DVector<f64>) -> DVector<f64> {
        match &self.map {
            Map::Diagonal { w, .. } => self.impulse(z).component_mul(w),
            Map::Dense { w_jacobian, .. } => {
                let n = self.layout.friction + self.layout.contacts;
                w_jacobian * z.rows(0, n)
            }
        }
    }
}

/// M⁻¹ X for a dense M⁻¹, exploiting a diagonal one when there is one.
pub fn apply_mass_inverse(mass_inverse: &DMatrix<f64>, x: &DMatrix<f64>) -> DMatrix<f64> {
    let n = mass_inverse.nrows();
    let diagonal = (0..n).all(|i| (0..n).all(|j| i == j || mass_inverse[(i, j)] == 0.0));
    if diagonal {
        let mut out = x.clone();
        for (i, mut row) in out.row_iter_mut().enumerate() {
            row *= mass_inverse[(i, i)];
        }
        out
    } else {
        mass_inverse * x
    }
}

/// Sweeps the SVD may take before it is declared not to converge. Golub–Kahan
/// converges in a few sweeps per singular value; a non-finite or overflowing
/// matrix would otherwise keep nalgebra's unbounded loop turning forever.
const SVD_SWEEPS: usize = 1000;

/// S⁺ for a symmetric positive semidefinite S (a Schur complement JᵀM⁻¹J),
/// dropping singular values below `1e-12 · max|S|` (dependent rows). `None`
/// when S holds a non-finite entry or the SVD does not converge, so that
/// inputs near the overflow limit fail the step instead of hanging it.
pub fn pseudo_inverse(s: DMatrix<f64>) -> Option<DMatrix<f64>> {
    let largest = s.amax();
    if !(largest.is_finite() && s.iter().all(|x| x.is_finite())) {
        return None;
    }
    let tolerance = 1e-12 * largest.max(f64::MIN_POSITIVE);
    s.try_svd(true, true, f64::EPSILON, SVD_SWEEPS)?
        .pseudo_inverse(tolerance)
        .ok()
        .filter(|p| p.iter().all(|x| x.is_finite()))
}
