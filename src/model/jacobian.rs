//! A contact's generalized normal n and friction directions D = [d₁ … d_k]
//! (Stewart–Trinkle §3), stored only where they are not zero: on the velocity
//! blocks of the one or two bodies that touch (3 columns per planar body, 6 per
//! spatial body), or on all coordinates of a generalized linear system, whose
//! rows are dense and small.
//!
//! A contact's storage is (k + 1)·(its blocks' width) numbers, independent of
//! how many bodies the system has, and every product with a generalized
//! vector costs that much, not the number of degrees of freedom.

use nalgebra::{DMatrix, DVector};

/// A contiguous range of generalized velocities: one body's block, or all the
/// coordinates of a linear system.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Block {
    /// Index of the first velocity.
    pub start: usize,
    /// Number of velocities.
    pub len: usize,
}

impl Block {
    /// The velocity indices it covers.
    pub fn range(self) -> std::ops::Range<usize> {
        self.start..self.start + self.len
    }
}

/// n and D of one contact on at most two velocity blocks.
///
/// Row 0 is n, rows 1..=k are d₁ … d_k; each row holds the entries of the
/// first block followed by those of the second.
#[derive(Debug, PartialEq)]
pub struct ContactJacobian {
    blocks: [Block; 2],
    count: usize,
    width: usize,
    rows: Vec<f64>,
}

impl ContactJacobian {
    /// A zero Jacobian with `friction` directions on the given blocks (one or
    /// two, not overlapping).
    pub fn zeros(blocks: &[Block], friction: usize) -> Self {
        let mut jacobian = Self::empty();
        jacobian.reset(blocks, friction);
        jacobian
    }

    /// No blocks and no rows: storage to be [`Self::reset`].
    pub fn empty() -> Self {
        let none = Block { start: 0, len: 0 };
        Self {
            blocks: [none; 2],
            count: 0,
            width: 0,
            rows: Vec::new(),
        }
    }

    /// Makes this a zero Jacobian with `friction` directions on `blocks`
    /// (one or two, not overlapping), reusing its storage.
    pub fn reset(&mut self, blocks: &[Block], friction: usize) {
        self.rows.clear();
        self.reshape(blocks, friction);
    }

    /// [`Self::reset`] without zeroing the entries the storage already
    /// holds: for a caller that writes every entry of every row.
    pub fn reshape(&mut self, blocks: &[Block], friction: usize) {
        assert!(
            (1..=2).contains(&blocks.len()),
            "a contact touches one or two velocity blocks"
        );
        self.blocks = [blocks[0]; 2];
        self.blocks[..blocks.len()].copy_from_slice(blocks);
        self.count = blocks.len();
        self.width = blocks.iter().map(|b| b.len).sum();
        self.rows.resize(self.width * (friction + 1), 0.0);
    }

    /// Dense rows: n and the columns of D given over all coordinates (linear
    /// systems).
    pub fn dense(normal: &DVector<f64>, friction: &DMatrix<f64>) -> Self {
        let dof = normal.len();
        let mut jacobian = Self::zeros(&[Block { start: 0, len: dof }], friction.ncols());
        jacobian.row_mut(0).copy_from_slice(normal.as_slice());
        for (c, column) in friction.column_iter().enumerate() {
            for (slot, value) in jacobian.row_mut(c + 1).iter_mut().zip(column.iter()) {
                *slot = *value;
            }
        }
        jacobian
    }

    /// The velocity blocks it touches.
    pub fn blocks(&self) -> &[Block] {
        &self.blocks[..self.count]
    }

    /// Number of friction directions k.
    pub fn friction_count(&self) -> usize {
        self.rows.len() / self.width.max(1) - 1
    }

    /// Entries per row (the blocks' total width).
    pub fn width(&self) -> usize {
        self.width
    }

    /// Numbers stored: (k + 1)·width.
    pub fn stored(&self) -> usize {
        self.rows.len()
    }

    /// Row r (0: n, i ≥ 1: dᵢ) over the blocks.
    pub fn row(&self, r: usize) -> &[f64] {
        &self.rows[r * self.width..(r + 1) * self.width]
    }

    /// Row r, mutable.
    pub fn row_mut(&mut self, r: usize) -> &mut [f64] {
        let w = self.width;
        &mut self.rows[r * w..(r + 1) * w]
    }

    /// The entries of row r on block b (0 or 1), mutable.
    pub fn block_row_mut(&mut self, r: usize, b: usize) -> &mut [f64] {
        let offset: usize = self.blocks[..b].iter().map(|x| x.len).sum();
        let len = self.blocks[b].len;
        let start = r * self.width + offset;
        &mut self.rows[start..start + len]
    }

    /// rowᵣ · v for a generalized vector v.
    pub fn dot(&self, r: usize, v: &DVector<f64>) -> f64 {
        let mut sum = [0.0];
        rows_dot(
            self.row(r),
            self.width,
            self.blocks(),
            v.as_slice(),
            &mut sum,
        );
        sum[0]
    }

    /// nᵀv.
    pub fn normal_dot(&self, v: &DVector<f64>) -> f64 {
        self.dot(0, v)
    }

    /// (row₀·v, …, row_{R−1}·v) in one pass over the blocks: NSGS's local
    /// velocity (n, t₁, t₂) at every visit of a contact.
    pub fn dots<const R: usize>(&self, v: &DVector<f64>) -> [f64; R] {
        let mut sums = [0.0; R];
        rows_dot(
            &self.rows,
            self.width,
            self.blocks(),
            v.as_slice(),
            &mut sums,
        );
        sums
    }

    /// out += α·rowᵣ.
    pub fn add_row(&self, r: usize, alpha: f64, out: &mut DVector<f64>) {
        let row = self.row(r);
        let mut offset = 0;
        for b in self.blocks() {
            for (o, a) in out.as_mut_slice()[b.range()]
                .iter_mut()
                .zip(&row[offset..offset + b.len])
            {
                *o += alpha * a;
            }
            offset += b.len;
        }
    }

    /// out += α·G·rowᵣ for a block-diagonal G given per velocity by
    /// `diagonal` (M⁻¹ of a rigid system: the velocity change of an impulse
    /// α along row r).
    pub fn add_weighted_row(&self, r: usize, alpha: f64, diagonal: &[f64], out: &mut DVector<f64>) {
        let row = self.row(r);
        let mut offset = 0;
        for b in self.blocks() {
            for (i, a) in row[offset..offset + b.len].iter().enumerate() {
                out[b.start + i] += diagonal[b.start + i] * alpha * a;
            }
            offset += b.len;
        }
    }

    /// n as a dense generalized vector of length `dof`.
    pub fn dense_normal(&self, dof: usize) -> DVector<f64> {
        let mut n = DVector::zeros(dof);
        self.add_row(0, 1.0, &mut n);
        n
    }

    /// Friction direction dᵢ (i from 0) as a dense generalized vector.
    pub fn dense_direction(&self, i: usize, dof: usize) -> DVector<f64> {
        let mut d = DVector::zeros(dof);
        self.add_row(i + 1, 1.0, &mut d);
        d
    }

    /// D as a dense dof × k matrix.
    pub fn dense_friction(&self, dof: usize) -> DMatrix<f64> {
        let k = self.friction_count();
        let mut d = DMatrix::zeros(dof, k);
        for i in 0..k {
            d.set_column(i, &self.dense_direction(i, dof));
        }
        d
    }

    /// rowᵣ(self) · G · rowₛ(other) for a block-diagonal G given per velocity
    /// by `diagonal` (a rigid system's M⁻¹ or a scaled copy): the entries of
    /// the Delassus matrix JᵀM⁻¹J, nonzero only where the two contacts share a
    /// body.
    pub fn coupling(&self, r: usize, other: &Self, s: usize, diagonal: &[f64]) -> f64 {
        let (a, b) = (self.row(r), other.row(s));
        let mut sum = 0.0;
        let mut oa = 0;
        for ba in self.blocks() {
            let mut ob = 0;
            for bb in other.blocks() {
                let lo = ba.start.max(bb.start);
                let hi = (ba.start + ba.len).min(bb.start + bb.len);
                for i in lo..hi {
                    sum += a[oa + i - ba.start] * diagonal[i] * b[ob + i - bb.start];
                }
                ob += bb.len;
            }
            oa += ba.len;
        }
        sum
    }

    /// [`Self::coupling`] of this contact's own rows a ≤ b < R with each
    /// other, in one pass over its entries: the upper triangle of its
    /// Delassus block, each entry the same sum in the same order as
    /// `coupling(a, self, b, diagonal)` gives it (the blocks of one contact
    /// do not overlap); the lower triangle is left zero.
    pub fn self_coupling<const R: usize>(&self, diagonal: &[f64]) -> [[f64; R]; R] {
        let mut out = [[0.0; R]; R];
        let mut offset = 0;
        for block in self.blocks() {
            for (k, i) in block.range().enumerate() {
                let d = diagonal[i];
                let entry = |r: usize| self.rows[r * self.width + offset + k];
                for (a, row) in out.iter_mut().enumerate() {
                    let weighted = entry(a) * d;
                    for (b, sum) in row.iter_mut().enumerate().skip(a) {
                        *sum += weighted * entry(b);
                    }
                }
            }
            offset += block.len;
        }
        out
    }
}

/// out[r] += rowᵣ · v for r in 0..out.len(), the rows stored one after the
/// other, `width` entries each, over `blocks` of v (a Jacobian's layout, and
/// that of NSGS's copies of the rows it sweeps).
pub(crate) fn rows_dot(rows: &[f64], width: usize, blocks: &[Block], v: &[f64], out: &mut [f64]) {
    let mut offset = 0;
    for b in blocks {
        let part = &v[b.range()];
        for (r, sum) in out.iter_mut().enumerate() {
            let start = r * width + offset;
            *sum += block_dot(&rows[start..start + b.len], part);
        }
        offset += b.len;
    }
}

/// a·b for two slices of one length; the body blocks' lengths (6 in space,
/// 3 in the plane) as fixed-size arrays, which the compiler unrolls.
fn block_dot(a: &[f64], b: &[f64]) -> f64 {
    fn fixed<const N: usize>(a: &[f64], b: &[f64]) -> Option<f64> {
        let a: &[f64; N] = a.try_into().ok()?;
        let b: &[f64; N] = b.try_into().ok()?;
        Some(a.iter().zip(b).map(|(x, y)| x * y).sum())
    }
    fixed::<6>(a, b)
        .or_else(|| fixed::<3>(a, b))
        .unwrap_or_else(|| a.iter().zip(b).map(|(x, y)| x * y).sum())
}

impl Clone for ContactJacobian {
    fn clone(&self) -> Self {
        Self {
            blocks: self.blocks,
            count: self.count,
            width: self.width,
            rows: self.rows.clone(),
        }
    }

    /// Copies `source` into the storage already held.
    fn clone_from(&mut self, source: &Self) {
        self.blocks = source.blocks;
        self.count = source.count;
        self.width = source.width;
        self.rows.clone_from(&source.rows);
    }
}

#[cfg(test)]
mod tests {
    use super::{Block, ContactJacobian};
    use rand::{Rng, SeedableRng, rngs::StdRng};

    /// The one-pass Delassus block is `coupling` entry by entry, to the
    /// bit, on random rows over one block and over two.
    #[test]
    fn self_coupling_is_coupling_bit_for_bit() {
        let mut rng = StdRng::seed_from_u64(11);
        let diagonal: Vec<f64> = (0..24).map(|_| rng.random_range(0.01..10.0)).collect();
        for case in 0..40 {
            let first = Block { start: 6, len: 6 };
            let blocks = if case % 2 == 0 {
                vec![first]
            } else {
                vec![first, Block { start: 18, len: 6 }]
            };
            let mut jacobian = ContactJacobian::zeros(&blocks, 4);
            for r in 0..5 {
                for x in jacobian.row_mut(r) {
                    *x = rng.random_range(-3.0..3.0);
                }
            }
            let upper = jacobian.self_coupling::<3>(&diagonal);
            for (a, row) in upper.iter().enumerate() {
                for (b, value) in row.iter().enumerate() {
                    let expected = if b < a {
                        0.0
                    } else {
                        jacobian.coupling(a, &jacobian, b, &diagonal)
                    };
                    assert_eq!(value.to_bits(), expected.to_bits(), "{case} {a} {b}");
                }
            }
        }
    }
}
