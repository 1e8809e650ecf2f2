//! The matrix of the LCP (29) for contacts between rigid bodies, as an
//! operator ([`LcpMatrix`]) that Lemke's method reads without M being formed.
//!
//! ```text
//!     ⎡ D̃ᵀWD̃ + εΔ   D̃ᵀWñ        Ẽ ⎤     W = M⁻¹ per body block,
//! M = ⎢ ñᵀWD̃        ñᵀWñ + εΔ   0 ⎥     Δ = diag(JᵀWJ)
//!     ⎣ −Ẽᵀ          μ̃           0 ⎦
//! ```
//!
//! An entry of JᵀWJ is a sum over the body blocks two contacts share (zero
//! when they share none); a column is W times one Jacobian row, then the rows
//! of the contacts that touch its bodies; a product M x is the impulse J x on
//! the blocks it touches, W per block, then Jᵀ on the contacts touching
//! those blocks. Each costs the nonzeros it involves, independent of the
//! number of bodies and of contacts elsewhere. ε is the relative compliance
//! of the regularization ladder ([`super::ladder`]): ε times each row's own
//! diagonal entry, zero for the scheme's own LCP.

use super::factors::{LocalBlock, Scratch};
use crate::lcp::{BlockSolver, LcpMatrix};
use crate::model::ContactJacobian;
use crate::solver::problem::Layout;
use nalgebra::{DMatrix, DVector};
use std::sync::Arc;

/// The (29) matrix of a set of contacts with a block-diagonal W.
pub struct ContactLcp<'a> {
    /// The block layout (contacts in the order given).
    pub layout: Layout,
    pub(super) jacobians: Vec<&'a ContactJacobian>,
    /// Per contact: its blocks as (local block, offset in its rows).
    pub(super) contact_blocks: Vec<Vec<(usize, usize)>>,
    /// Column of the first friction direction of each contact.
    pub(super) first_beta: Vec<usize>,
    /// Per LCP index: (contact, row) with row 0 = n, i ≥ 1 = dᵢ, and
    /// `LAMBDA` for λ.
    pub(super) owner: Vec<(usize, usize)>,
    pub(super) blocks: Vec<LocalBlock>,
    /// W per generalized velocity (global indexing).
    pub(super) w: &'a [f64],
    /// μ per contact.
    pub(super) mu: &'a [f64],
    /// Relative compliance ε: ε·Δᵢᵢ is added to each diagonal entry of JᵀWJ.
    pub(super) regularization: f64,
    /// The diagonal Δ of JᵀWJ (zero on the λ rows).
    pub(super) diagonal: Vec<f64>,
    /// Largest diagonal entry of JᵀWJ.
    pub(super) largest_diagonal: f64,
    /// The equilibration S ([`Self::equilibrate`]).
    pub(super) scale: Option<Vec<f64>>,
    /// max |(SMS)ᵢⱼ| off the regularized diagonal.
    pub(super) scaled_magnitude: f64,
    pub(super) scratch: std::cell::RefCell<Scratch>,
    /// Storage for the next [`Self::equilibrate`].
    pub(super) spare_scale: Vec<f64>,
    /// Lists of (contact, offset) and the block index kept for the next
    /// operator.
    pub(super) spare_lists: Vec<Vec<(usize, usize)>>,
    pub(super) spare_index: rustc_hash::FxHashMap<usize, usize>,
}

/// The storage of a [`ContactLcp`], handed from one operator to the next
/// ([`ContactLcp::new_in`], [`ContactLcp::into_storage`]): the islands of a
/// step build their operators in turn without allocating what an earlier
/// one already did.
#[derive(Debug, Clone, Default)]
pub struct ContactLcpStorage {
    pub(super) contact_blocks: Vec<Vec<(usize, usize)>>,
    pub(super) first_beta: Vec<usize>,
    pub(super) owner: Vec<(usize, usize)>,
    pub(super) blocks: Vec<LocalBlock>,
    pub(super) index: rustc_hash::FxHashMap<usize, usize>,
    pub(super) diagonal: Vec<f64>,
    pub(super) scale: Vec<f64>,
    pub(super) scratch: Scratch,
    pub(super) lists: Vec<Vec<(usize, usize)>>,
}

/// The row marker of λ in [`ContactLcp::owner`].
pub(super) const LAMBDA: usize = usize::MAX;

impl<'a> ContactLcp<'a> {
    /// The operator for `jacobians` (in this order) with W = diag(`w`) and
    /// friction coefficients `mu`.
    pub fn new(jacobians: Vec<&'a ContactJacobian>, w: &'a [f64], mu: &'a [f64]) -> Self {
        Self::new_in(jacobians, w, mu, ContactLcpStorage::default())
    }

    /// [`Self::new`] in the storage of an earlier operator.
    pub fn new_in(
        jacobians: Vec<&'a ContactJacobian>,
        w: &'a [f64],
        mu: &'a [f64],
        storage: ContactLcpStorage,
    ) -> Self {
        let ContactLcpStorage {
            mut contact_blocks,
            mut first_beta,
            mut owner,
            mut blocks,
            mut index,
            diagonal: stored_diagonal,
            scale: spare_scale,
            scratch,
            mut lists,
        } = storage;
        lists.extend(blocks.drain(..).map(|b| b.contacts));
        lists.append(&mut contact_blocks);
        let mut list = || {
            let mut l = lists.pop().unwrap_or_default();
            l.clear();
            l
        };
        let p = jacobians.len();
        let friction: usize = jacobians.iter().map(|c| c.friction_count()).sum();
        let layout = Layout {
            contacts: p,
            friction,
        };
        first_beta.clear();
        owner.clear();
        owner.resize(layout.size(), (0, 0));
        let mut column = 0;
        for (j, c) in jacobians.iter().enumerate() {
            first_beta.push(column);
            for i in 0..c.friction_count() {
                owner[column + i] = (j, i + 1);
            }
            column += c.friction_count();
            owner[layout.normal(j)] = (j, 0);
            owner[layout.lambda(j)] = (j, LAMBDA);
        }
        index.clear();
        let mut flat = 0;
        for (j, c) in jacobians.iter().enumerate() {
            let mut mine = list();
            let mut offset = 0;
            for b in c.blocks() {
                let local = *index.entry(b.start).or_insert_with(|| {
                    blocks.push(LocalBlock {
                        start: b.start,
                        len: b.len,
                        contacts: list(),
                        flat,
                    });
                    flat += b.len;
                    blocks.len() - 1
                });
                blocks[local].contacts.push((j, offset));
                mine.push((local, offset));
                offset += b.len;
            }
            contact_blocks.push(mine);
        }
        let blocks_len = blocks.len();
        let mut scratch = scratch;
        scratch.factors.invalidate();
        scratch.impulse.clear();
        scratch.impulse.resize(flat, 0.0);
        scratch.marked.clear();
        scratch.marked.resize(blocks_len, false);
        scratch.touched.clear();
        let mut lcp = Self {
            layout,
            jacobians,
            contact_blocks,
            first_beta,
            owner,
            blocks,
            w,
            mu,
            regularization: 0.0,
            diagonal: Vec::new(),
            largest_diagonal: 0.0,
            scale: None,
            scaled_magnitude: 1.0,
            scratch: std::cell::RefCell::new(scratch),
            spare_scale,
            spare_lists: lists,
            spare_index: index,
        };
        let mut diagonal = stored_diagonal;
        diagonal.clear();
        diagonal.extend((0..friction + p).map(|i| lcp.delassus(i, i)));
        lcp.largest_diagonal = diagonal.iter().copied().fold(0.0, f64::max);
        diagonal.resize(lcp.layout.size(), 0.0);
        lcp.diagonal = diagonal;
        lcp
    }

    /// Its storage, for the next operator ([`Self::new_in`]).
    pub fn into_storage(self) -> ContactLcpStorage {
        ContactLcpStorage {
            contact_blocks: self.contact_blocks,
            first_beta: self.first_beta,
            owner: self.owner,
            blocks: self.blocks,
            index: self.spare_index,
            diagonal: self.diagonal,
            scale: self.scale.unwrap_or(self.spare_scale),
            scratch: self.scratch.into_inner(),
            lists: self.spare_lists,
        }
    }

    /// Largest diagonal entry of JᵀWJ.
    pub fn largest_diagonal(&self) -> f64 {
        self.largest_diagonal
    }

    /// Sets the relative compliance ε: ε·Δᵢᵢ is added to each diagonal entry
    /// of JᵀWJ.
    pub fn set_regularization(&mut self, epsilon: f64) {
        self.regularization = epsilon;
        self.scratch.get_mut().factors.invalidate();
    }

    /// The diagonal Δ of JᵀWJ, laid out as the LCP (zero on the λ rows).
    pub fn diagonal(&self) -> &[f64] {
        &self.diagonal
    }

    /// The LCP index of row r (0: n, i ≥ 1: dᵢ) of contact j.
    pub fn index(&self, j: usize, r: usize) -> usize {
        self.column(j, r)
    }

    pub(super) fn column(&self, j: usize, r: usize) -> usize {
        if r == 0 {
            self.layout.normal(j)
        } else {
            self.first_beta[j] + r - 1
        }
    }

    /// Row r of contact a, W, row s of contact b: Σ over shared blocks.
    pub(super) fn coupling(&self, a: usize, r: usize, b: usize, s: usize) -> f64 {
        let (ja, jb) = (self.jacobians[a], self.jacobians[b]);
        let (ra, rb) = (ja.row(r), jb.row(s));
        let mut sum = 0.0;
        for &(la, oa) in &self.contact_blocks[a] {
            for &(lb, ob) in &self.contact_blocks[b] {
                if la == lb {
                    let block = &self.blocks[la];
                    let w = &self.w[block.start..block.start + block.len];
                    for i in 0..block.len {
                        sum += ra[oa + i] * w[i] * rb[ob + i];
                    }
                }
            }
        }
        sum
    }

    /// The (JᵀWJ)ᵢⱼ entry for two Delassus indices.
    pub(super) fn delassus(&self, i: usize, j: usize) -> f64 {
        let (a, r) = self.owner[i];
        let (b, s) = self.owner[j];
        self.coupling(a, r, b, s)
    }

    /// The matrix (scaled, when equilibrated) as a dense LCP matrix (for
    /// dumps and tests).
    pub fn to_dense(&self) -> DMatrix<f64> {
        let n = self.layout.size();
        let mut m = DMatrix::zeros(n, n);
        let mut column = vec![0.0; n];
        for j in 0..n {
            column.iter_mut().for_each(|x| *x = 0.0);
            self.add_column(j, 1.0, &mut column);
            m.set_column(j, &DVector::from_column_slice(&column));
        }
        m
    }

    /// Jᵀx for a generalized vector x (global indexing): the (β̃, c̃_n) part
    /// of an LCP vector, zero on λ̃.
    pub fn transpose_times(&self, x: &DVector<f64>) -> DVector<f64> {
        let mut out = DVector::zeros(self.layout.size());
        for (j, c) in self.jacobians.iter().enumerate() {
            for r in 0..=c.friction_count() {
                out[self.column(j, r)] = c.dot(r, x);
            }
        }
        out
    }

    /// Adds W J z (the velocity change of the impulses z) to `out` (global
    /// indexing).
    pub fn add_velocity_change(&self, z: &DVector<f64>, out: &mut DVector<f64>) {
        for (j, c) in self.jacobians.iter().enumerate() {
            for r in 0..=c.friction_count() {
                let value = z[self.column(j, r)];
                if value != 0.0 {
                    c.add_weighted_row(r, value, self.w, out);
                }
            }
        }
    }
}

impl ContactLcp<'_> {
    /// Scales the LCP to S M S with S = Δ^{-1/2} on the (β̃, c̃_n) rows and
    /// Δ_nn^{1/2} of the contact on its λ row (Anitescu–Potra's equilibration),
    /// so that every diagonal entry of JᵀWJ is 1 and μ̃ keeps its value. Bodies
    /// of very different masses (1 kg beside 10⁸ kg) give rows of JᵀWJ that
    /// differ by the mass ratio; Lemke's relative tolerances need them
    /// equilibrated. The solution of LCP(SMS, Sq) is S⁻¹z; [`Self::scale`]
    /// gives S.
    pub fn equilibrate(&mut self) {
        let floor = 1e-300_f64.max(1e-14 * self.largest_diagonal);
        let mut scale = std::mem::take(&mut self.spare_scale);
        scale.clear();
        scale.resize(self.layout.size(), 1.0);
        for (i, s) in scale
            .iter_mut()
            .enumerate()
            .take(self.layout.friction + self.layout.contacts)
        {
            *s = 1.0 / self.diagonal[i].max(floor).sqrt();
        }
        for j in 0..self.layout.contacts {
            scale[self.layout.lambda(j)] = self.diagonal[self.layout.normal(j)].max(floor).sqrt();
        }
        let mut magnitude = 1.0_f64;
        for j in 0..self.layout.contacts {
            let lambda = scale[self.layout.lambda(j)];
            magnitude = magnitude.max(self.mu[j].abs());
            let k = self.jacobians[j].friction_count();
            for i in 0..k {
                magnitude = magnitude.max(lambda * scale[self.first_beta[j] + i]);
            }
        }
        self.scaled_magnitude = magnitude;
        self.scale = Some(scale);
        self.scratch.get_mut().factors.invalidate();
    }

    /// S of [`Self::equilibrate`] (`None`: unscaled).
    pub fn scale(&self) -> Option<&[f64]> {
        self.scale.as_deref()
    }

    pub(super) fn entry_unscaled(&self, i: usize, j: usize) -> f64 {
        let (a, r) = self.owner[i];
        let (b, s) = self.owner[j];
        match (r == LAMBDA, s == LAMBDA) {
            (false, false) => {
                let value = self.coupling(a, r, b, s);
                if i == j {
                    value + self.regularization * self.diagonal[i]
                } else {
                    value
                }
            }
            // Ẽ: friction rows of the same contact.
            (false, true) => f64::from(u8::from(a == b && r > 0)),
            (true, false) if a == b => {
                if s == 0 {
                    self.mu[a]
                } else {
                    -1.0
                }
            }
            _ => 0.0,
        }
    }

    /// out += S (M x) for the unscaled M and x already scaled (S = `scale`,
    /// or the identity): the structure and the regularization on their
    /// rows, the impulse J x on the blocks it touches, W per block, then Jᵀ
    /// on the contacts touching those blocks.
    ///
    /// `wanted`: the entries of `out` the caller reads; the products of J
    /// for the others are not computed (those entries may or may not be
    /// updated).
    pub(super) fn add_product_scaled(
        &self,
        x: &[(usize, f64)],
        scale: Option<&[f64]>,
        (transpose, wanted): (bool, Option<&[bool]>),
        out: &mut [f64],
    ) {
        let s = |i: usize| scale.map_or(1.0, |s| s[i]);
        let mut scratch = self.scratch.borrow_mut();
        let Scratch {
            impulse,
            marked,
            touched,
            ..
        } = &mut *scratch;
        for &(j, value) in x {
            if value == 0.0 {
                continue;
            }
            let (b, r) = self.owner[j];
            let start = self.first_beta[b];
            let k = self.jacobians[b].friction_count();
            let lambda = self.layout.lambda(b);
            if r == LAMBDA {
                if transpose {
                    // Column λ of Mᵀ is row λ of M: μ̃ and −Ẽᵀ.
                    let normal = self.layout.normal(b);
                    out[normal] += value * self.mu[b] * s(normal);
                    for (i, o) in out.iter_mut().enumerate().skip(start).take(k) {
                        *o -= value * s(i);
                    }
                } else {
                    // Ẽ: +1 on each friction row of contact b.
                    for (i, o) in out.iter_mut().enumerate().skip(start).take(k) {
                        *o += value * s(i);
                    }
                }
                continue;
            }
            let structure = match (transpose, r == 0) {
                // μ̃ (normal) or −Ẽᵀ (friction) on the λ row of contact b.
                (false, true) => self.mu[b],
                (false, false) => -1.0,
                // Mᵀ: the normal row has no structure, a friction row Ẽ's 1.
                (true, true) => 0.0,
                (true, false) => 1.0,
            };
            out[lambda] += value * structure * s(lambda);
            if self.regularization != 0.0 {
                out[j] += self.regularization * self.diagonal[j] * value * s(j);
            }
            let row = self.jacobians[b].row(r);
            for &(l, offset) in &self.contact_blocks[b] {
                let block = &self.blocks[l];
                let p = &mut impulse[block.flat..block.flat + block.len];
                if !marked[l] {
                    marked[l] = true;
                    touched.push(l);
                    p.fill(0.0);
                }
                for (p, v) in p.iter_mut().zip(&row[offset..offset + block.len]) {
                    *p += value * v;
                }
            }
        }
        for &l in touched.iter() {
            let block = &self.blocks[l];
            let u = &mut impulse[block.flat..block.flat + block.len];
            for (p, w) in u
                .iter_mut()
                .zip(&self.w[block.start..block.start + block.len])
            {
                *p *= w;
            }
            for &(a, offset) in &block.contacts {
                let c = self.jacobians[a];
                let (normal, first, k) = (
                    self.layout.normal(a),
                    self.first_beta[a],
                    c.friction_count(),
                );
                // Row r of contact a into its column (`self.column(a, r)`);
                // each column takes one term a block, in any order of r.
                let mut add = |r: usize, column: usize| {
                    let row = &c.row(r)[offset..offset + block.len];
                    out[column] += dot(row, u) * s(column);
                };
                match wanted {
                    None => {
                        add(0, normal);
                        (1..=k).for_each(|r| add(r, first + r - 1));
                    }
                    Some(wanted) => {
                        if wanted[normal] {
                            add(0, normal);
                        }
                        for (i, _) in wanted[first..first + k].iter().enumerate().filter(|w| *w.1) {
                            add(i + 1, first + i);
                        }
                    }
                }
            }
            marked[l] = false;
        }
        touched.clear();
    }
}

impl ContactLcp<'_> {
    /// The row of J W^½ of LCP index i (a normal or friction direction) on
    /// its body blocks, as (flat index of the velocity in the island's
    /// blocks, value); nothing for a λ.
    pub(super) fn weighted_row(&self, i: usize) -> impl Iterator<Item = (usize, f64)> + '_ {
        let (j, r) = self.owner[i];
        let contact = (r != LAMBDA).then_some(j);
        contact.into_iter().flat_map(move |j| {
            let row = self.jacobians[j].row(r);
            self.contact_blocks[j].iter().flat_map(move |&(l, offset)| {
                let block = &self.blocks[l];
                let w = &self.w[block.start..block.start + block.len];
                row[offset..offset + block.len]
                    .iter()
                    .zip(w)
                    .enumerate()
                    .map(move |(f, (&x, &wf))| (block.flat + f, x * wf.sqrt()))
                    .filter(|&(_, v)| v != 0.0)
            })
        })
    }

    /// out += S (M x) or S (Mᵀ x) for x unscaled (S = `scale`, or the
    /// identity).
    pub(super) fn add_scaled(
        &self,
        x: &[(usize, f64)],
        (transpose, wanted): (bool, Option<&[bool]>),
        out: &mut [f64],
    ) {
        match self.scale.as_deref() {
            None => self.add_product_scaled(x, None, (transpose, wanted), out),
            Some(s) => {
                let scaled: Vec<(usize, f64)> = x.iter().map(|&(j, v)| (j, v * s[j])).collect();
                self.add_product_scaled(&scaled, Some(s), (transpose, wanted), out);
            }
        }
    }
}

impl LcpMatrix for ContactLcp<'_> {
    fn size(&self) -> usize {
        self.layout.size()
    }

    fn entry(&self, i: usize, j: usize) -> f64 {
        match &self.scale {
            None => self.entry_unscaled(i, j),
            Some(s) => s[i] * self.entry_unscaled(i, j) * s[j],
        }
    }

    fn add_column(&self, j: usize, alpha: f64, out: &mut [f64]) {
        let scale = self.scale.as_deref();
        let alpha = alpha * scale.map_or(1.0, |s| s[j]);
        self.add_product_scaled(&[(j, alpha)], scale, (false, None), out);
    }

    fn add_product(&self, x: &[(usize, f64)], out: &mut [f64]) {
        self.add_scaled(x, (false, None), out);
    }

    fn add_transpose_product(&self, x: &[(usize, f64)], wanted: &[bool], out: &mut [f64]) {
        self.add_scaled(x, (true, Some(wanted)), out);
    }

    fn factor_block(
        &self,
        rows: &[usize],
        columns: &[usize],
        covering: Option<&[f64]>,
    ) -> Option<Box<dyn BlockSolver>> {
        KktBlock::new(self, rows, columns, covering).map(|b| Box::new(b) as Box<dyn BlockSolver>)
    }

    fn magnitude(&self) -> f64 {
        match &self.scale {
            None => {
                let mu = self.mu.iter().fold(1.0_f64, |m, x| m.max(x.abs()));
                (self.largest_diagonal * (1.0 + self.regularization)).max(mu)
            }
            Some(_) => self.scaled_magnitude.max(1.0 + self.regularization),
        }
    }
}

/// The block S = [−M_KC | −d_K] of a Lemke basis for [`ContactLcp`],
/// factored in the KKT form of Lloyd (UBC TR-2005-01, §3): with ỹ =
/// W^{-½} y the velocity change of the basic impulses x,
///
/// ```text
///     ⎡ I              −W^½ J_Cᵀ S_C ⎤ ⎡ ỹ ⎤   ⎡ 0   ⎤
///     ⎣ −S_K J_K W^½   −S_K P_KC S_C ⎦ ⎣ x ⎦ = ⎣ b_K ⎦
/// ```
///
/// (S the equilibration, P the structure Ẽ, μ̃ and the regularization εΔ;
/// z₀'s column −d_K joins the lower right). Eliminating ỹ gives S x = b_K;
/// the matrix has the bodies' degrees of freedom plus m rows and the
/// Jacobian blocks as its nonzeros, where S itself couples every basic
/// impulse with every other on the same body. A sparse LU (faer's, COLAMD
/// ordering, partial pivoting) factors it in a few milliseconds where a
/// dense LU of S (m ≈ 870 on a pile of 100 bodies) took tens.
pub(super) struct KktBlock {
    pub(super) lu: Arc<faer::sparse::linalg::solvers::Lu<usize, f64>>,
    /// Rows of the ỹ part.
    pub(super) dof: usize,
    /// m.
    pub(super) size: usize,
}

impl KktBlock {
    pub(super) fn new(
        lcp: &ContactLcp<'_>,
        rows: &[usize],
        columns: &[usize],
        covering: Option<&[f64]>,
    ) -> Option<Self> {
        use faer::sparse::SparseColMat;
        let m = columns.len() + usize::from(covering.is_some());
        if rows.len() != m {
            return None;
        }
        let dof = lcp.flat_len();
        let kept = lcp
            .scratch
            .borrow_mut()
            .factors
            .block(rows, columns, covering);
        if let Some(lu) = kept {
            return Some(Self { lu, dof, size: m });
        }
        let n = lcp.layout.size();
        let s = |i: usize| lcp.scale.as_deref().map_or(1.0, |s| s[i]);
        let mut k_pos = vec![usize::MAX; n];
        for (k, &i) in rows.iter().enumerate() {
            k_pos[i] = k;
        }
        // Built column by column, rows in increasing order (the canonical
        // form, so that equal patterns compare equal): the columns of ỹ
        // hold 1 on the diagonal and −S_K J_K W^½ below it, the columns of
        // C −W^½ J_Cᵀ S_C and then the structure −S P S on the rows of K.
        let size = dof + m;
        let mut below: Vec<(usize, usize, f64)> = Vec::with_capacity(12 * rows.len());
        for (k, &i) in rows.iter().enumerate() {
            for (f, v) in lcp.weighted_row(i) {
                below.push((f, k, -s(i) * v));
            }
        }
        let mut start = vec![0; dof + 1];
        for &(f, _, _) in &below {
            start[f + 1] += 1;
        }
        for f in 0..dof {
            // The diagonal's 1 and the entries below it.
            start[f + 1] += start[f] + 1;
        }
        let nnz = start[dof] + 14 * columns.len() + m;
        let mut col_ptr = Vec::with_capacity(size + 1);
        let mut row_idx = vec![0; start[dof]];
        let mut values = vec![0.0; start[dof]];
        let mut next = start.clone();
        for f in 0..dof {
            row_idx[next[f]] = f;
            values[next[f]] = 1.0;
            next[f] += 1;
        }
        // In increasing k within each column, as `below` is.
        for &(f, k, v) in &below {
            row_idx[next[f]] = dof + k;
            values[next[f]] = v;
            next[f] += 1;
        }
        col_ptr.extend_from_slice(&start[..dof]);
        row_idx.reserve(nnz - row_idx.len());
        values.reserve(nnz - values.len());
        let mut column: Vec<(usize, f64)> = Vec::with_capacity(16);
        for &i in columns {
            col_ptr.push(row_idx.len());
            let si = s(i);
            column.clear();
            column.extend(lcp.weighted_row(i).map(|(f, v)| (f, -si * v)));
            // The structure of column i (−S P S) on the rows of K.
            let (b, r) = lcp.owner[i];
            let mut put = |row: usize, value: f64| {
                let k = k_pos[row];
                if k != usize::MAX && value != 0.0 {
                    column.push((dof + k, -s(row) * value * si));
                }
            };
            if r == LAMBDA {
                let start = lcp.first_beta[b];
                for row in start..start + lcp.jacobians[b].friction_count() {
                    put(row, 1.0);
                }
            } else {
                put(lcp.layout.lambda(b), if r == 0 { lcp.mu[b] } else { -1.0 });
                put(i, lcp.regularization * lcp.diagonal[i]);
            }
            column.sort_unstable_by_key(|&(row, _)| row);
            row_idx.extend(column.iter().map(|&(row, _)| row));
            values.extend(column.iter().map(|&(_, v)| v));
        }
        if let Some(d) = covering {
            col_ptr.push(row_idx.len());
            for (k, &i) in rows.iter().enumerate() {
                if d[i] != 0.0 {
                    row_idx.push(dof + k);
                    values.push(-d[i]);
                }
            }
        }
        col_ptr.push(row_idx.len());
        let pattern =
            faer::sparse::SymbolicSparseColMat::new_checked(size, size, col_ptr, None, row_idx);
        let matrix = SparseColMat::<usize, f64>::new(pattern, values);
        // Column-compressed with sorted, summed entries: the pattern is
        // canonical, so equal patterns compare equal.
        let mut scratch = lcp.scratch.borrow_mut();
        let lu = scratch.factors.lu(&matrix)?;
        scratch.factors.keep_block(rows, columns, covering, &lu);
        Some(Self { lu, dof, size: m })
    }

    /// Solves the whole KKT system in place: `b` holds the ỹ rows, then
    /// the m rows of the block.
    pub(super) fn solve_full(&self, b: &mut [f64]) {
        use faer::linalg::solvers::Solve;
        let mat = faer::MatMut::from_column_major_slice_mut(b, self.dof + self.size, 1);
        self.lu.solve_in_place(mat);
    }

    /// Solves the block for each of the `count` columns of `b` (m ×
    /// `count`, column-major), each embedded in the whole KKT system with
    /// zero ỹ rows. faer's sparse triangular solves take up to four
    /// right-hand sides per pass over the factors, each with the
    /// operations of its own solve (the same result, bit for bit).
    pub(super) fn solve_columns(&self, b: &mut [f64], count: usize, transpose: bool) {
        use faer::linalg::solvers::Solve;
        if count == 0 {
            return;
        }
        let (m, rows) = (self.size, self.dof + self.size);
        debug_assert_eq!(b.len(), m * count);
        let mut rhs = vec![0.0; rows * count];
        for (full, column) in rhs.chunks_exact_mut(rows).zip(b.chunks_exact(m)) {
            full[self.dof..].copy_from_slice(column);
        }
        let mat = faer::MatMut::from_column_major_slice_mut(&mut rhs, rows, count);
        if transpose {
            self.lu.solve_transpose_in_place(mat);
        } else {
            self.lu.solve_in_place(mat);
        }
        for (full, column) in rhs.chunks_exact(rows).zip(b.chunks_exact_mut(m)) {
            column.copy_from_slice(&full[self.dof..]);
        }
    }
}

impl BlockSolver for KktBlock {
    fn solve(&self, b: &mut [f64]) {
        self.solve_columns(b, 1, false);
    }

    fn solve_transpose(&self, b: &mut [f64]) {
        self.solve_columns(b, 1, true);
    }

    fn solve_transpose_columns(&self, b: &mut [f64], count: usize) {
        self.solve_columns(b, count, true);
    }
}

/// xᵀy summed from the first entry on, as `Iterator::sum` does; a spatial
/// body's block of 6 as one fixed-size expression (the same bits).
#[inline]
fn dot(x: &[f64], y: &[f64]) -> f64 {
    if let (Ok(x), Ok(y)) = (<&[f64; 6]>::try_from(x), <&[f64; 6]>::try_from(y)) {
        return x[0] * y[0] + x[1] * y[1] + x[2] * y[2] + x[3] * y[3] + x[4] * y[4] + x[5] * y[5];
    }
    x.iter().zip(y).map(|(a, b)| a * b).sum()
}
