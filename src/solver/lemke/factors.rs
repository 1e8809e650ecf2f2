//! The factorizations behind Lemke's basis blocks on the operator
//! ([`super::operator::ContactLcp`]), kept by pattern and values so that a
//! basis met again is not factored twice, and the operator's work space.

use std::sync::Arc;

/// A body's velocity block as the operator sees it.
#[derive(Debug, Clone)]
pub(super) struct LocalBlock {
    /// First generalized velocity (global index).
    pub(super) start: usize,
    /// Number of velocities.
    pub(super) len: usize,
    /// The contacts touching it: (contact, offset of this block in its rows).
    pub(super) contacts: Vec<(usize, usize)>,
    /// Offset of its velocities in [`Scratch::impulse`].
    pub(super) flat: usize,
}

/// Work space of the operator's products (`ContactLcp::add_product`), kept between calls so that a
/// product costs the nonzeros it touches and allocates nothing.
#[derive(Debug, Clone, Default)]
pub(super) struct Scratch {
    /// The impulse J x, then W J x, on the local blocks (flat).
    pub(super) impulse: Vec<f64>,
    /// Whether a local block is in `touched`.
    pub(super) marked: Vec<bool>,
    /// The local blocks the current product touches.
    pub(super) touched: Vec<usize>,
    /// Recent factorizations of KKT blocks ([`KktBlock`]).
    pub(super) factors: FactorCache,
}

/// The symbolic analyses (COLAMD ordering and elimination structure) of the
/// last few sparsity patterns factored ([`KktBlock::new`]) and the last
/// numeric factorizations, most recent first. A Lemke run factors its basis block again at every
/// refactorization, the tableau starts by factoring the warm basis that
/// `feasible_warm` factored just before, and the final basis is factored
/// for its check and again for its refinement; the fixed-point iterations
/// of a step then solve each island again from the same basis. The
/// pattern is the key (compared entry by entry), and the numeric
/// factorization from a kept analysis is the one a fresh analysis gives,
/// bit for bit: the analysis is a function of the pattern alone. Within
/// one operator the block asked for (its rows, columns and covering
/// vector) is the key too, so that a block factored again is found without
/// building its matrix (a third of `KktBlock::new`'s time).
#[derive(Debug, Clone, Default)]
pub(super) struct FactorCache {
    pub(super) entries: Vec<SymbolicEntry>,
    /// The last numeric factorizations, with their matrices' values: the
    /// same basis of the same LCP is factored again by the tableau after
    /// `feasible_warm`, and by the refinement after the final check.
    pub(super) numeric: Vec<NumericEntry>,
    /// The operator the factorizations below belong to: a new operator,
    /// a new regularization or a new scaling changes it
    /// ([`Self::invalidate`]).
    pub(super) operator: u64,
    /// The last blocks of this operator, by the rows, columns and covering
    /// vector asked for: the same block of the same operator is the same
    /// matrix, found without building it.
    pub(super) blocks: Vec<BlockEntry>,
}

/// A block of [`FactorCache::operator`]: what [`KktBlock::new`] was asked
/// for, and its factorization.
#[derive(Debug, Clone)]
pub(super) struct BlockEntry {
    pub(super) operator: u64,
    pub(super) rows: Vec<usize>,
    pub(super) columns: Vec<usize>,
    pub(super) covering: Option<Vec<u64>>,
    pub(super) lu: Arc<faer::sparse::linalg::solvers::Lu<usize, f64>>,
}

/// A sparsity pattern, compressed by columns.
#[derive(Debug, Clone, Default)]
pub(super) struct Pattern {
    pub(super) nrows: usize,
    pub(super) col_ptr: Vec<usize>,
    pub(super) row_idx: Vec<usize>,
}

impl Pattern {
    pub(super) fn is(&self, pattern: faer::sparse::SymbolicSparseColMatRef<'_, usize>) -> bool {
        self.nrows == pattern.nrows()
            && self.col_ptr.as_slice() == pattern.col_ptr()
            && self.row_idx.as_slice() == pattern.row_idx()
    }

    pub(super) fn set(&mut self, pattern: faer::sparse::SymbolicSparseColMatRef<'_, usize>) {
        self.nrows = pattern.nrows();
        self.col_ptr.clear();
        self.col_ptr.extend_from_slice(pattern.col_ptr());
        self.row_idx.clear();
        self.row_idx.extend_from_slice(pattern.row_idx());
    }
}

#[derive(Debug, Clone)]
pub(super) struct NumericEntry {
    pub(super) pattern: Pattern,
    pub(super) values: Vec<u64>,
    pub(super) lu: Arc<faer::sparse::linalg::solvers::Lu<usize, f64>>,
}

#[derive(Debug, Clone)]
pub(super) struct SymbolicEntry {
    pub(super) pattern: Pattern,
    pub(super) symbolic: faer::sparse::linalg::solvers::SymbolicLu<usize>,
}

/// Moves entry `i` of `entries` to the front (the most recent).
pub(super) fn to_front<T>(entries: &mut Vec<T>, i: usize) {
    let entry = entries.remove(i);
    entries.insert(0, entry);
}

/// Storage for a new most recent entry of `entries`: the least recent one,
/// taken out, when `entries` holds `capacity`, else `fresh()`.
pub(super) fn recycled<T>(entries: &mut Vec<T>, capacity: usize, fresh: impl FnOnce() -> T) -> T {
    if entries.len() >= capacity
        && let Some(entry) = entries.pop()
    {
        entry
    } else {
        fresh()
    }
}

/// Whether `kept` holds the bits of `values`.
pub(super) fn same_bits(kept: &[u64], values: &[f64]) -> bool {
    kept.len() == values.len() && kept.iter().zip(values).all(|(a, b)| *a == b.to_bits())
}

/// `kept` set to the bits of `values`, in its storage.
pub(super) fn set_bits(kept: &mut Vec<u64>, values: &[f64]) {
    kept.clear();
    kept.extend(values.iter().map(|v| v.to_bits()));
}

impl FactorCache {
    /// Patterns kept.
    const CAPACITY: usize = 4;
    /// Numeric factorizations kept.
    const NUMERIC: usize = 2;

    /// The operator's values change: no kept block is one of its blocks.
    pub(super) fn invalidate(&mut self) {
        self.operator = self.operator.wrapping_add(1);
    }

    /// The factorization of the block asked for with these rows, columns
    /// and covering vector of the current operator, if it is kept.
    pub(super) fn block(
        &mut self,
        rows: &[usize],
        columns: &[usize],
        covering: Option<&[f64]>,
    ) -> Option<Arc<faer::sparse::linalg::solvers::Lu<usize, f64>>> {
        let operator = self.operator;
        let i = self.blocks.iter().position(|e| {
            e.operator == operator
                && e.rows == rows
                && e.columns == columns
                && match (&e.covering, covering) {
                    (None, None) => true,
                    (Some(kept), Some(d)) => same_bits(kept, d),
                    _ => false,
                }
        })?;
        to_front(&mut self.blocks, i);
        Some(Arc::clone(&self.blocks[0].lu))
    }

    /// Keeps the factorization of a block of the current operator.
    pub(super) fn keep_block(
        &mut self,
        rows: &[usize],
        columns: &[usize],
        covering: Option<&[f64]>,
        lu: &Arc<faer::sparse::linalg::solvers::Lu<usize, f64>>,
    ) {
        let mut entry = recycled(&mut self.blocks, Self::NUMERIC, || BlockEntry {
            operator: 0,
            rows: Vec::new(),
            columns: Vec::new(),
            covering: None,
            lu: Arc::clone(lu),
        });
        entry.operator = self.operator;
        entry.rows.clear();
        entry.rows.extend_from_slice(rows);
        entry.columns.clear();
        entry.columns.extend_from_slice(columns);
        match covering {
            Some(d) => set_bits(entry.covering.get_or_insert_with(Vec::new), d),
            None => entry.covering = None,
        }
        entry.lu = Arc::clone(lu);
        self.blocks.insert(0, entry);
    }

    /// The LU of `matrix`: kept if the same matrix (pattern and values, bit
    /// for bit) was factored lately, else factored from its pattern's
    /// analysis ([`Self::get`]).
    pub(super) fn lu(
        &mut self,
        matrix: &faer::sparse::SparseColMat<usize, f64>,
    ) -> Option<Arc<faer::sparse::linalg::solvers::Lu<usize, f64>>> {
        let pattern = matrix.symbolic();
        let values = matrix.val();
        let same = |e: &NumericEntry| e.pattern.is(pattern) && same_bits(&e.values, values);
        if let Some(i) = self.numeric.iter().position(same) {
            to_front(&mut self.numeric, i);
            return Some(Arc::clone(&self.numeric[0].lu));
        }
        let symbolic = self.get(pattern)?;
        let lu = Arc::new(
            faer::sparse::linalg::solvers::Lu::try_new_with_symbolic(symbolic, matrix.as_ref())
                .ok()?,
        );
        let mut entry = recycled(&mut self.numeric, Self::NUMERIC, || NumericEntry {
            pattern: Pattern::default(),
            values: Vec::new(),
            lu: Arc::clone(&lu),
        });
        entry.pattern.set(pattern);
        set_bits(&mut entry.values, values);
        entry.lu = Arc::clone(&lu);
        self.numeric.insert(0, entry);
        Some(lu)
    }

    /// The analysis of `pattern`, from the cache or computed and kept.
    pub(super) fn get(
        &mut self,
        pattern: faer::sparse::SymbolicSparseColMatRef<'_, usize>,
    ) -> Option<faer::sparse::linalg::solvers::SymbolicLu<usize>> {
        if let Some(i) = self.entries.iter().position(|e| e.pattern.is(pattern)) {
            to_front(&mut self.entries, i);
            return Some(self.entries[0].symbolic.clone());
        }
        let symbolic = faer::sparse::linalg::solvers::SymbolicLu::try_new(pattern).ok()?;
        let mut entry = recycled(&mut self.entries, Self::CAPACITY, || SymbolicEntry {
            pattern: Pattern::default(),
            symbolic: symbolic.clone(),
        });
        entry.pattern.set(pattern);
        entry.symbolic = symbolic.clone();
        self.entries.insert(0, entry);
        Some(symbolic)
    }
}
