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
use crate::model::block_inverse::DisjointSets;
use crate::model::{BlockInverse, Contact, ContactJacobian, MassInverse};
use crate::solver::linalg::{BasisBlock, velocity_newton};
use crate::solver::problem::Layout;
use nalgebra::{DMatrix, DVector};

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
    pub(super) contacts: Vec<&'a ContactJacobian>,
    /// Column of the first friction direction of each contact.
    pub(super) first_beta: Vec<usize>,
    pub(super) map: Map,
    pub(super) dof: usize,
}

pub(super) enum Map {
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
    /// W block-diagonal over components; per contact, per component it
    /// touches, its rows there and W times them.
    Blocks {
        inverse: BlockInverse,
        parts: Vec<Vec<Part>>,
        /// For each component, the contacts touching it.
        touching: std::collections::BTreeMap<usize, Vec<usize>>,
    },
}

/// A contact's rows on one component g of W: J_g ((k + 1) × |g|, row r the
/// contact's row r) and W_g J_gᵀ (|g| × (k + 1)).
pub(super) struct Part {
    pub(super) component: usize,
    pub(super) rows: DMatrix<f64>,
    pub(super) weighted: DMatrix<f64>,
}

impl Part {
    /// The parts of contact `c` over the components of `inverse`.
    pub(super) fn of(c: &ContactJacobian, inverse: &BlockInverse) -> Vec<Part> {
        let components = inverse.components_of();
        let mut parts: Vec<Part> = Vec::new();
        let mut offset = 0;
        for block in c.blocks() {
            for i in block.range() {
                let (g, p) = inverse.place(i);
                let index = match parts.iter().position(|part| part.component == g) {
                    Some(index) => index,
                    None => {
                        let len = components[g].velocities.len();
                        parts.push(Part {
                            component: g,
                            rows: DMatrix::zeros(c.friction_count() + 1, len),
                            weighted: DMatrix::zeros(0, 0),
                        });
                        parts.len() - 1
                    }
                };
                for r in 0..=c.friction_count() {
                    parts[index].rows[(r, p)] = c.row(r)[offset + i - block.start];
                }
            }
            offset += block.len;
        }
        for part in &mut parts {
            part.weighted = &components[part.component].w * part.rows.transpose();
        }
        parts
    }
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
            MassInverse::Blocks(inverse) => {
                let parts: Vec<Vec<Part>> =
                    jacobians.iter().map(|c| Part::of(c, inverse)).collect();
                let mut touching: std::collections::BTreeMap<usize, Vec<usize>> =
                    std::collections::BTreeMap::new();
                for (j, list) in parts.iter().enumerate() {
                    for part in list {
                        touching.entry(part.component).or_default().push(j);
                    }
                }
                Map::Blocks {
                    inverse: inverse.clone(),
                    parts,
                    touching,
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
    pub(super) fn column(&self, j: usize, r: usize) -> usize {
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
            Map::Blocks { touching, .. } => {
                let mut m = DMatrix::zeros(n, n);
                self.add_component_couplings(touching.keys().copied(), |i| i, &mut m);
                m
            }
        }
    }

    /// Adds J_aᵀ (W_g J_b) into `m` at (`place`(a's row), `place`(b's row))
    /// for every ordered pair of contacts a, b on each component g of
    /// `components` (W by blocks; W need not be symmetric, so every ordered
    /// pair), one small product per pair and component.
    pub(super) fn add_component_couplings(
        &self,
        components: impl Iterator<Item = usize>,
        place: impl Fn(usize) -> usize,
        m: &mut DMatrix<f64>,
    ) {
        let Map::Blocks {
            parts, touching, ..
        } = &self.map
        else {
            return;
        };
        for g in components {
            let list = touching.get(&g).map_or(&[][..], |l| l.as_slice());
            for &a in list {
                let Some(pa) = parts[a].iter().find(|p| p.component == g) else {
                    continue;
                };
                let rows: Vec<usize> = (0..pa.rows.nrows())
                    .map(|r| place(self.column(a, r)))
                    .collect();
                for &b in list {
                    let Some(pb) = parts[b].iter().find(|p| p.component == g) else {
                        continue;
                    };
                    let block = &pa.rows * &pb.weighted;
                    for s in 0..block.ncols() {
                        let k = place(self.column(b, s));
                        for (r, &i) in rows.iter().enumerate() {
                            m[(i, k)] += block[(r, s)];
                        }
                    }
                }
            }
        }
    }

    /// The parts of the LCP that W does not couple: lists of contacts
    /// (ascending, the parts ordered by their first contact) such that no
    /// two contacts of different parts share a velocity block (W diagonal)
    /// or a component of W (W by blocks). A dense W couples every contact.
    pub fn parts(&self) -> Vec<Vec<usize>> {
        let p = self.contacts.len();
        let lists: Vec<&Vec<usize>> = match &self.map {
            Map::Diagonal { touching, .. } | Map::Blocks { touching, .. } => {
                touching.values().collect()
            }
            Map::Dense { .. } => {
                return if p == 0 {
                    Vec::new()
                } else {
                    vec![(0..p).collect()]
                };
            }
        };
        let mut sets = DisjointSets::new(p);
        for list in lists {
            for pair in list.windows(2) {
                sets.join(pair[0], pair[1]);
            }
        }
        sets.groups()
    }

    /// Sets the entries of JᵀWJ between contact a's rows and each of
    /// `coupled`'s, at their `place`.
    pub(super) fn set_entries(
        &self,
        a: usize,
        coupled: &[usize],
        place: impl Fn(usize) -> usize,
        m: &mut DMatrix<f64>,
    ) {
        for &b in coupled {
            for r in 0..=self.contacts[a].friction_count() {
                let i = place(self.column(a, r));
                for s in 0..=self.contacts[b].friction_count() {
                    m[(i, place(self.column(b, s)))] = self.entry(a, r, b, s);
                }
            }
        }
    }

    /// G = JᵀWJ between rows r of contact a and s of contact b.
    pub(super) fn entry(&self, a: usize, r: usize, b: usize, s: usize) -> f64 {
        match &self.map {
            Map::Diagonal { w, .. } => {
                self.contacts[a].coupling(r, self.contacts[b], s, w.as_slice())
            }
            Map::Dense {
                jacobian,
                w_jacobian,
            } => jacobian
                .column(self.column(a, r))
                .dot(&w_jacobian.column(self.column(b, s))),
            Map::Blocks { parts, .. } => parts[a]
                .iter()
                .filter_map(|pa| {
                    let pb = parts[b].iter().find(|pb| pb.component == pa.component)?;
                    Some(pa.rows.row(r).dot(&pb.weighted.column(s).transpose()))
                })
                .sum(),
        }
    }

    /// The diagonal of JᵀWJ (the (β̃, c̃_n) rows), for the equilibration.
    pub fn delassus_diagonal(&self) -> DVector<f64> {
        let mut d = DVector::zeros(self.layout.friction + self.layout.contacts);
        for (j, c) in self.contacts.iter().enumerate() {
            for r in 0..=c.friction_count() {
                d[self.column(j, r)] = self.entry(j, r, j, r);
            }
        }
        d
    }

    /// The LCP (29) of the contacts `part` (a list from [`Self::parts`])
    /// alone: its unknowns' indices in the whole LCP (ascending, so (β̃, c̃_n)
    /// rows before λ̃ rows) and the LCP on them, with the same arguments as
    /// [`Self::lcp`]. Only the part's entries are formed.
    pub fn lcp_part(
        &self,
        part: &[usize],
        free: &DVector<f64>,
        gap_terms: &[f64],
        mu: &[f64],
    ) -> (Vec<usize>, Lcp) {
        let layout = self.layout;
        let mut index = Vec::new();
        for &j in part {
            index.extend((0..=self.contacts[j].friction_count()).map(|r| self.column(j, r)));
            index.push(layout.lambda(j));
        }
        index.sort_unstable();
        let local = |i: usize| {
            index
                .binary_search(&i)
                .unwrap_or_else(|_| unreachable!("every unknown of the part is indexed"))
        };
        let size = index.len();
        let mut m = DMatrix::zeros(size, size);
        let mut q = DVector::zeros(size);
        match &self.map {
            Map::Blocks { parts, .. } => {
                let mut components: Vec<usize> = part
                    .iter()
                    .flat_map(|&a| parts[a].iter().map(|piece| piece.component))
                    .collect();
                components.sort_unstable();
                components.dedup();
                self.add_component_couplings(components.into_iter(), local, &mut m);
            }
            // Entry by entry (only Anitescu–Potra's W by blocks is solved by
            // parts; the others are here for completeness and the tests).
            Map::Diagonal { .. } | Map::Dense { .. } => {
                for &a in part {
                    self.set_entries(a, part, local, &mut m);
                }
            }
        }
        for &a in part {
            let ca = self.contacts[a];
            let lambda = local(layout.lambda(a));
            for i in 0..ca.friction_count() {
                let row = local(self.first_beta[a] + i);
                m[(row, lambda)] = 1.0; // Ẽ
                m[(lambda, row)] = -1.0; // −Ẽᵀ
            }
            m[(lambda, local(layout.normal(a)))] = mu[a]; // μ̃
            for r in 0..=ca.friction_count() {
                q[local(self.column(a, r))] = ca.dot(r, free);
            }
            q[local(layout.normal(a))] += gap_terms[a];
        }
        (index, Lcp { m, q })
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

    /// max/min of 1/m over the bodies the contacts of `part` touch (W at a
    /// body block's first velocity, which is linear): how far apart their
    /// masses are (1 for a dense W, whose contacts are not refined after a
    /// ray).
    pub fn mass_spread(&self, part: &[usize]) -> f64 {
        let starts = part
            .iter()
            .flat_map(|&j| self.contacts[j].blocks().iter().map(|b| b.start));
        match &self.map {
            Map::Diagonal { w, .. } => crate::solver::linalg::spread(starts.map(|s| w[s])),
            Map::Blocks { inverse, .. } => {
                let components = inverse.components_of();
                crate::solver::linalg::spread(starts.map(|s| {
                    let (c, p) = inverse.place(s);
                    components[c].w[(p, p)]
                }))
            }
            Map::Dense { .. } => 1.0,
        }
    }

    /// The contact of LCP index i and its row: `Some(r)` for row r of J
    /// (0: the normal, r ≥ 1: dᵣ), `None` for λ.
    pub(super) fn owner(&self, i: usize) -> (usize, Option<usize>) {
        let layout = self.layout;
        if i >= layout.friction + layout.contacts {
            (i - layout.friction - layout.contacts, None)
        } else if i >= layout.friction {
            (i - layout.friction, Some(0))
        } else {
            let j = self.first_beta.partition_point(|&b| b <= i) - 1;
            (j, Some(i - self.first_beta[j] + 1))
        }
    }

    /// wᵢ = J_i Δv + (P z)ᵢ + qᵢ with the velocity change Δv given: P the
    /// structure of (29) (Ẽλ on a friction row, μ̃c_n − Ẽᵀβ on a λ row).
    pub(super) fn slack(
        &self,
        i: usize,
        dv: &DVector<f64>,
        z: &DVector<f64>,
        q: f64,
        mu: &[f64],
    ) -> f64 {
        let (j, row) = self.owner(i);
        let structure = match row {
            None => {
                let start = self.first_beta[j];
                let beta: f64 = z.rows(start, self.contacts[j].friction_count()).sum();
                mu[j] * z[self.layout.normal(j)] - beta
            }
            Some(0) => 0.0,
            Some(_) => z[self.layout.lambda(j)],
        };
        let velocity = row.map_or(0.0, |r| self.contacts[j].dot(r, dv));
        velocity + structure + q
    }

    /// The dense form of [`super::contact_lcp::ContactLcp::polish`]: the
    /// solution of a part's LCP (29) (`m`, `q` unscaled, without
    /// regularization, over the LCP indices `index`) at its complementary
    /// basis (local indices whose z is basic), refined by Newton steps on
    ///
    /// ```text
    ///     Δv − W Jᵀz = 0,      J_K Δv + (P z)_K + q_K = 0
    /// ```
    ///
    /// with the velocity change Δv an unknown of its own: each step solves
    /// (JᵀWJ + P)_KK δz = −w_K − J_K r, r = W Jᵀz − Δv, then Δv += r +
    /// W Jᵀδz, so the contact rows are met to the rounding of the velocities
    /// while the impulses' rounding shows only in r (an imbalance of
    /// momentum). Returns the part's (z, w) and the whole Δv; `None` when
    /// the block is singular or a step is not finite.
    pub fn polish(
        &self,
        m: &DMatrix<f64>,
        index: &[usize],
        q: &DVector<f64>,
        basis: &[usize],
        z: &DVector<f64>,
        mu: &[f64],
    ) -> Option<(DVector<f64>, DVector<f64>, DVector<f64>)> {
        let k = basis.len();
        let block = BasisBlock::new(DMatrix::from_fn(k, k, |r, c| m[(basis[r], basis[c])]));
        // The basic unknowns' places in the whole layout.
        let positions: Vec<usize> = basis.iter().map(|&a| index[a]).collect();
        let mut whole = DVector::zeros(self.layout.size());
        for (&a, &i) in basis.iter().zip(&positions) {
            whole[i] = z[a];
        }
        let dv = velocity_newton(
            &block,
            &positions,
            &mut whole,
            |x| self.velocity_change(x),
            |row, v| {
                let (j, jrow) = self.owner(positions[row]);
                jrow.map_or(0.0, |r| self.contacts[j].dot(r, v))
            },
            |row, dv, x| self.slack(positions[row], dv, x, q[basis[row]], mu),
        )?;
        let z = DVector::from_fn(index.len(), |a, _| whole[index[a]]);
        let w = DVector::from_fn(index.len(), |a, _| {
            self.slack(index[a], &dv, &whole, q[a], mu)
        });
        Some((z, w, dv))
    }

    /// The velocity change W(D̃β̃ + ñc̃_n) for a solution z.
    pub fn velocity_change(&self, z: &DVector<f64>) -> DVector<f64> {
        match &self.map {
            Map::Diagonal { w, .. } => self.impulse(z).component_mul(w),
            Map::Dense { w_jacobian, .. } => {
                let n = self.layout.friction + self.layout.contacts;
                w_jacobian * z.rows(0, n)
            }
            Map::Blocks { inverse, .. } => inverse.apply(&self.impulse(z)),
        }
    }
}
