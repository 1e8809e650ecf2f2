//! Anderson acceleration of a fixed-point iteration x ↦ G(x) (Anderson 1965;
//! Walker & Ni, "Anderson acceleration for fixed-point iterations", SIAM J.
//! Numer. Anal. 49, 2011, the "type II" form of their (2.1)).
//!
//! With the residuals f = G(x) − x of the last m + 1 iterates, their
//! differences ΔF = [f₁ − f₀, …] and ΔG = [G₁ − G₀, …], the next iterate is
//!
//! ```text
//!   x⁺ = G(x) − ΔG γ,   γ = argmin ‖f − ΔF γ‖₂,
//! ```
//!
//! the combination of the last G's whose residuals combine to the smallest
//! one. For a linear map G(x) = Hx + c this is GMRES on (I − H)x = c
//! (Walker & Ni, Theorem 2.2): a Gauss–Seidel sweep that moves a load one
//! contact a sweep along a chain converges in as many steps as GMRES needs,
//! not as the sweep's spectral radius allows. The least squares is solved
//! by its normal equations, kept up to date one column at a time (m + 1 dot
//! products an iterate), with a relative Tikhonov term 1e-12 for the
//! columns that are nearly dependent once the iteration has converged.
//!
//! G here is nonsmooth (a contact changes mode), so the iteration is
//! safeguarded: the history restarts when the residual grows, and mixing
//! pauses when it stagnates ([`Anderson::restarts`]).

/// The state of Anderson acceleration over vectors of one length.
#[derive(Debug, Clone, Default)]
pub struct Anderson {
    memory: usize,
    len: usize,
    /// ΔF columns, `memory` slots of `len`, a ring.
    df: Vec<f64>,
    /// ΔG columns, the same slots.
    dg: Vec<f64>,
    /// ΔFᵀΔF over the slots, `memory` × `memory`.
    gram: Vec<f64>,
    /// ΔFᵀf of the latest iterate, by slot: kept up to date through
    /// f_k = f_{k−1} + ΔF_newest, so that an iterate costs one dot product
    /// for it instead of one a column.
    rhs: Vec<f64>,
    /// Slots in use, and the slot of the oldest column.
    count: usize,
    oldest: usize,
    /// f and G of the last iterate, and ‖f‖², when there is one.
    last_f: Vec<f64>,
    last_g: Vec<f64>,
    last_norm: Option<f64>,
    /// The smallest ‖f‖² since the last reset, and mixed iterates since.
    best: f64,
    since_best: usize,
    /// Plain iterates left before mixing again, and the next such pause.
    pause: usize,
    next_pause: usize,
}

impl Anderson {
    /// Acceleration over the last `memory` differences (memory 0: none),
    /// safeguarded for a nonsmooth G (module documentation).
    pub fn new(memory: usize) -> Self {
        Self {
            memory: memory.min(MAX_MEMORY),
            ..Self::default()
        }
    }

    /// The number of past differences combined.
    pub fn memory(&self) -> usize {
        self.memory
    }

    /// Forgets the history; the next iterates have `len` entries.
    pub fn reset(&mut self, len: usize) {
        self.len = len;
        self.count = 0;
        self.oldest = 0;
        self.last_norm = None;
        self.best = f64::INFINITY;
        self.since_best = 0;
        self.pause = 0;
        self.next_pause = self.stall();
        self.df.resize(self.memory * len, 0.0);
        self.dg.resize(self.memory * len, 0.0);
        self.gram.resize(self.memory * self.memory, 0.0);
        self.rhs.resize(self.memory, 0.0);
        self.last_f.resize(len, 0.0);
        self.last_g.resize(len, 0.0);
    }

    /// Given the iterate `x` and `g` = G(x), both of the length of the last
    /// [`Anderson::reset`], writes the next iterate into `x`. Returns false
    /// when that is `g` itself (no history yet, a restart, a pause or a
    /// degenerate least squares).
    pub fn next(&mut self, x: &mut [f64], g: &mut [f64]) -> bool {
        let plan = self.plan();
        let sums = {
            let [mut piece, ..] = self.pieces(x, g, [x.len(); 2]);
            piece.first_pass(&plan)
        };
        let step = self.decide(&plan, sums);
        let [mut piece, ..] = self.pieces(x, g, [x.len(); 2]);
        piece.second_pass(&step);
        step.mixes()
    }

    /// What the coming iterate does before its residual is known: the slot
    /// its column of differences goes to, if any, and the other columns.
    pub fn plan(&self) -> Plan {
        let m = self.memory;
        let mut plan = Plan {
            slot: None,
            others: [0; MAX_MEMORY],
            other_count: 0,
        };
        if m == 0 || self.last_norm.is_none() {
            return plan;
        }
        let (slot, count, oldest) = if self.count < m {
            ((self.oldest + self.count) % m, self.count + 1, self.oldest)
        } else {
            (self.oldest, m, (self.oldest + 1) % m)
        };
        plan.slot = Some(slot);
        for s in (0..count).map(|i| (oldest + i) % m) {
            if s != slot {
                plan.others[plan.other_count] = s;
                plan.other_count += 1;
            }
        }
        plan
    }

    /// The iterate `x` and `g` = G(x) cut at `cuts` into three pieces, each
    /// with the history's entries of the same range, for
    /// [`Piece::first_pass`] and [`Piece::second_pass`] (on any threads:
    /// the pieces are disjoint).
    pub fn pieces<'a>(
        &'a mut self,
        x: &'a mut [f64],
        g: &'a mut [f64],
        cuts: [usize; 2],
    ) -> [Piece<'a>; 3] {
        assert!(
            x.len() == self.len && g.len() == self.len,
            "Anderson: vectors of {} and {} entries after reset({})",
            x.len(),
            g.len(),
            self.len
        );
        let n = self.len;
        let cuts = [cuts[0].min(n), cuts[1].clamp(cuts[0].min(n), n)];
        let [xa, xb, xc] = three(x, cuts);
        let [ga, gb, gc] = three(g, cuts);
        let [fa, fb, fc] = three(&mut self.last_f, cuts);
        let [la, lb, lc] = three(&mut self.last_g, cuts);
        let [dfa, dfb, dfc] = columns(&mut self.df, n, cuts);
        let [dga, dgb, dgc] = columns(&mut self.dg, n, cuts);
        [
            Piece {
                x: xa,
                g: ga,
                last_f: fa,
                last_g: la,
                df: dfa,
                dg: dga,
            },
            Piece {
                x: xb,
                g: gb,
                last_f: fb,
                last_g: lb,
                df: dfb,
                dg: dgb,
            },
            Piece {
                x: xc,
                g: gc,
                last_f: fc,
                last_g: lc,
                df: dfc,
                dg: dgc,
            },
        ]
    }

    /// After the first pass over every piece, with their [`Sums`] added up
    /// (in a fixed order): the safeguards, the new column's row of the
    /// Gram matrix, and the combination, if any.
    pub fn decide(&mut self, plan: &Plan, sums: Sums) -> Step {
        let m = self.memory;
        let norm = sums.norm;
        let restart = self.restarts(norm);
        self.last_norm = Some(norm);
        let plain = Step {
            gamma: [0.0; MAX_MEMORY],
            slots: [0; MAX_MEMORY],
            count: 0,
            mixes: false,
        };
        // The plan has no slot without memory or without a last iterate.
        let Some(slot) = plan.slot.filter(|_| !restart && norm.is_finite()) else {
            self.count = 0;
            self.oldest = 0;
            return plain;
        };
        if self.count < m {
            self.count += 1;
        } else {
            self.oldest = (self.oldest + 1) % m;
        }
        for (&s, &value) in plan.others[..plan.other_count].iter().zip(&sums.dots) {
            self.gram[s * m + slot] = value;
            self.gram[slot * m + s] = value;
            self.rhs[s] += value;
        }
        self.gram[slot * m + slot] = sums.square;
        self.rhs[slot] = sums.with_f;
        self.mix().unwrap_or(plain)
    }

    /// The safeguards at an iterate with ‖f‖² = `norm`: whether the history
    /// restarts from it, G(x) being the next iterate.
    /// - Growth: a residual larger than the last one restarts (Walker & Ni
    ///   §5's restarted variants). The combination itself is kept: the
    ///   acceleration needs the iterates that are worse for a sweep or two
    ///   on the way.
    /// - Stagnation: combinations and restarts can cycle without progress (a
    ///   mode switch that the combination undoes). After [`Self::stall`]
    ///   mixed iterates without a new smallest residual, plain iterates make
    ///   the progress G itself makes, for twice as long each time it
    ///   happens, so that at worst the iteration is G's own.
    fn restarts(&mut self, norm: f64) -> bool {
        if self.pause > 0 {
            self.pause -= 1;
            self.best = self.best.min(norm);
            return true;
        }
        if norm < self.best {
            self.best = norm;
            self.since_best = 0;
        } else {
            self.since_best += 1;
        }
        if self.since_best > self.stall() {
            self.pause = self.next_pause;
            self.next_pause *= 2;
            self.since_best = 0;
            return true;
        }
        self.last_norm.is_some_and(|last| norm > last)
    }

    /// Mixed iterates without a new smallest residual that count as
    /// stagnation.
    fn stall(&self) -> usize {
        40 * self.memory.max(1)
    }

    /// The slots in use, oldest first.
    fn slots(&self) -> impl Iterator<Item = usize> + use<> {
        let (m, oldest) = (self.memory, self.oldest);
        (0..self.count).map(move |i| (oldest + i) % m)
    }

    /// γ of the combination G(x) − ΔG γ, when the normal equations have
    /// a finite solution.
    fn mix(&self) -> Option<Step> {
        let (m, c) = (self.memory, self.count);
        let mut slots = [0; MAX_MEMORY];
        for (i, s) in self.slots().enumerate() {
            slots[i] = s;
        }
        let mut a = nalgebra::DMatrix::<f64>::zeros(c, c);
        let mut b = nalgebra::DVector::<f64>::zeros(c);
        let mut scale: f64 = 0.0;
        for (i, &si) in slots[..c].iter().enumerate() {
            for (j, &sj) in slots[..c].iter().enumerate() {
                a[(i, j)] = self.gram[si * m + sj];
            }
            scale = scale.max(a[(i, i)]);
            b[i] = self.rhs[si];
        }
        if !(scale > 0.0 && scale.is_finite()) {
            return None;
        }
        for i in 0..c {
            a[(i, i)] += 1e-12 * scale;
        }
        let gamma = a.cholesky().map(|ch| ch.solve(&b))?;
        if !gamma.iter().all(|v| v.is_finite()) {
            return None;
        }
        let mut step = Step {
            gamma: [0.0; MAX_MEMORY],
            slots,
            count: c,
            mixes: true,
        };
        step.gamma[..c].copy_from_slice(gamma.as_slice());
        Some(step)
    }
}

/// The most past differences combined.
pub const MAX_MEMORY: usize = 16;

/// Partial sums of [`Piece::first_pass`]'s products: the entries i, i +
/// LANES, … go to one (four: 256-bit registers of f64).
const LANES: usize = 4;

/// The partial sums added up, in a fixed order.
fn lanes_sum(lanes: [f64; LANES]) -> f64 {
    (lanes[0] + lanes[1]) + (lanes[2] + lanes[3])
}

with_avx2! {
/// aᵀb over [`LANES`] partial sums.
fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut lanes = [0.0; LANES];
    let (ac, bc) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let (ar, br) = (ac.remainder(), bc.remainder());
    for (a, b) in ac.zip(bc) {
        for l in 0..LANES {
            lanes[l] += a[l] * b[l];
        }
    }
    for (l, (a, b)) in ar.iter().zip(br).enumerate() {
        lanes[l] += a * b;
    }
    lanes_sum(lanes)
}
}

with_avx2! {
/// f = g − x into x and into `last_f`, g into `last_g`; returns ‖f‖².
/// The slices are of one length.
fn plain_column(x: &mut [f64], g: &[f64], last_f: &mut [f64], last_g: &mut [f64]) -> f64 {
    let n = x.len();
    let (g, last_f, last_g) = (&g[..n], &mut last_f[..n], &mut last_g[..n]);
    let mut norm = [0.0; LANES];
    let entry = |x: &mut f64, g: f64, last_f: &mut f64, last_g: &mut f64, norm: &mut f64| {
        let f = g - *x;
        *x = f;
        *norm += f * f;
        *last_f = f;
        *last_g = g;
    };
    // Whole groups of [`LANES`] entries as arrays, entry i in lane
    // i mod LANES, so that a group is one vector operation; the rest in
    // lanes 0, 1, … in turn.
    let (xs, x_rest) = x.as_chunks_mut::<LANES>();
    let (gs, g_rest) = g.as_chunks::<LANES>();
    let (fs, f_rest) = last_f.as_chunks_mut::<LANES>();
    let (ls, l_rest) = last_g.as_chunks_mut::<LANES>();
    for (((x, g), f), l) in xs.iter_mut().zip(gs).zip(fs).zip(ls) {
        for lane in 0..LANES {
            entry(&mut x[lane], g[lane], &mut f[lane], &mut l[lane], &mut norm[lane]);
        }
    }
    for (lane, (((x, g), f), l)) in x_rest.iter_mut().zip(g_rest).zip(f_rest).zip(l_rest).enumerate() {
        entry(x, *g, f, l, &mut norm[lane]);
    }
    lanes_sum(norm)
}
}

with_avx2! {
/// f = g − x into x, the new column Δf = f − last f into `df` and Δg =
/// g − last g into `dg`, f and g kept as the last; returns ‖f‖², ‖Δf‖²
/// and Δfᵀf.
/// The slices are of one length.
fn new_column(
    x: &mut [f64],
    g: &[f64],
    last_f: &mut [f64],
    last_g: &mut [f64],
    df: &mut [f64],
    dg: &mut [f64],
) -> [f64; 3] {
    let n = x.len();
    let (g, last_f, last_g) = (&g[..n], &mut last_f[..n], &mut last_g[..n]);
    let (df, dg) = (&mut df[..n], &mut dg[..n]);
    // ‖f‖², ‖Δf‖², Δfᵀf by lane.
    let (mut norm, mut square, mut with_f) = ([0.0; LANES], [0.0; LANES], [0.0; LANES]);
    let entry = |x: &mut f64, g: f64, columns: [&mut f64; 4], sums: [&mut f64; 3]| {
        let [last_f, last_g, df, dg] = columns;
        let [norm, square, with_f] = sums;
        let f = g - *x;
        *x = f;
        let d = f - *last_f;
        *df = d;
        *dg = g - *last_g;
        *norm += f * f;
        *square += d * d;
        *with_f += d * f;
        *last_f = f;
        *last_g = g;
    };
    // As [`plain_column`]'s groups.
    let (xs, x_rest) = x.as_chunks_mut::<LANES>();
    let (gs, g_rest) = g.as_chunks::<LANES>();
    let (fs, f_rest) = last_f.as_chunks_mut::<LANES>();
    let (ls, l_rest) = last_g.as_chunks_mut::<LANES>();
    let (dfs, df_rest) = df.as_chunks_mut::<LANES>();
    let (dgs, dg_rest) = dg.as_chunks_mut::<LANES>();
    let groups = xs.iter_mut().zip(gs).zip(fs).zip(ls).zip(dfs).zip(dgs);
    for (((((x, g), f), l), df), dg) in groups {
        for lane in 0..LANES {
            entry(
                &mut x[lane],
                g[lane],
                [&mut f[lane], &mut l[lane], &mut df[lane], &mut dg[lane]],
                [&mut norm[lane], &mut square[lane], &mut with_f[lane]],
            );
        }
    }
    let rest = x_rest.iter_mut().zip(g_rest).zip(f_rest).zip(l_rest).zip(df_rest).zip(dg_rest);
    for (lane, (((((x, g), f), l), df), dg)) in rest.enumerate() {
        entry(x, *g, [f, l, df, dg], [&mut norm[lane], &mut square[lane], &mut with_f[lane]]);
    }
    [lanes_sum(norm), lanes_sum(square), lanes_sum(with_f)]
}
}

with_avx2! {
/// x −= Σₖ γₖ dₖ over the `count` columns `slots` of `columns`, each
/// entry from its own value down the columns in their order (the bits of
/// one pass a column), [`COMBINED`] entries at a time held in registers
/// while the columns are read.
fn subtract_combination(x: &mut [f64], step: &Step, columns: &[&mut [f64]]) {
    let n = x.len();
    let mut picked: [&[[f64; COMBINED]]; MAX_MEMORY] = [&[]; MAX_MEMORY];
    let mut tails: [&[f64]; MAX_MEMORY] = [&[]; MAX_MEMORY];
    for ((p, t), &s) in picked.iter_mut().zip(&mut tails).zip(&step.slots[..step.count]) {
        (*p, *t) = columns[s][..n].as_chunks::<COMBINED>();
    }
    let count = step.count;
    let (picked, tails, gamma) = (&picked[..count], &tails[..count], &step.gamma[..count]);
    let (blocks, rest) = x.as_chunks_mut::<COMBINED>();
    for (b, block) in blocks.iter_mut().enumerate() {
        let mut sum = *block;
        for (&gamma, d) in gamma.iter().zip(picked) {
            let d = &d[b];
            for i in 0..COMBINED {
                sum[i] -= gamma * d[i];
            }
        }
        *block = sum;
    }
    for (i, x) in rest.iter_mut().enumerate() {
        for (&gamma, d) in gamma.iter().zip(tails) {
            *x -= gamma * d[i];
        }
    }
}
}

/// Entries of [`subtract_combination`]'s running sums: eight 256-bit
/// registers of f64.
const COMBINED: usize = 8 * LANES;

/// [`Anderson::plan`].
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    slot: Option<usize>,
    others: [usize; MAX_MEMORY],
    other_count: usize,
}

/// What [`Piece::first_pass`] sums over its entries: ‖f‖², the new
/// column's ‖Δf‖² and Δfᵀf, and its products with the other columns (in
/// [`Plan`]'s order).
#[derive(Debug, Clone, Copy, Default)]
pub struct Sums {
    pub norm: f64,
    pub square: f64,
    pub with_f: f64,
    pub dots: [f64; MAX_MEMORY],
}

impl std::ops::Add for Sums {
    type Output = Self;
    fn add(self, other: Self) -> Self {
        let mut dots = self.dots;
        for (d, o) in dots.iter_mut().zip(other.dots) {
            *d += o;
        }
        Self {
            norm: self.norm + other.norm,
            square: self.square + other.square,
            with_f: self.with_f + other.with_f,
            dots,
        }
    }
}

/// [`Anderson::decide`]: the next iterate is G(x) − ΔG γ over `slots`, or
/// G(x) itself.
#[derive(Debug, Clone, Copy)]
pub struct Step {
    gamma: [f64; MAX_MEMORY],
    slots: [usize; MAX_MEMORY],
    count: usize,
    mixes: bool,
}

impl Step {
    /// Whether the next iterate is a combination rather than G(x).
    pub fn mixes(&self) -> bool {
        self.mixes
    }
}

/// A range of the iterate with the history's entries of that range
/// ([`Anderson::pieces`]).
pub struct Piece<'a> {
    x: &'a mut [f64],
    g: &'a mut [f64],
    last_f: &'a mut [f64],
    last_g: &'a mut [f64],
    df: Vec<&'a mut [f64]>,
    dg: Vec<&'a mut [f64]>,
}

impl Piece<'_> {
    /// The entries of the next iterate ([`Piece::second_pass`]).
    pub fn next(&self) -> &[f64] {
        self.x
    }

    /// The piece's entries of the iterate x and of its image G(x), for the
    /// iteration to write before [`Piece::first_pass`].
    pub fn iterate(&mut self) -> (&mut [f64], &mut [f64]) {
        (self.x, self.g)
    }

    /// f = g − x (kept in x), the new column (f − last f, g − last g) in
    /// the plan's slot, f and g kept as the last iterate's, and the sums
    /// over this piece.
    ///
    /// The new column is written in one pass and its products with the
    /// other columns follow, one column a pass; every sum runs over
    /// [`LANES`] interleaved partial sums, which the compiler keeps in one
    /// vector register (a single running sum forces one addition after
    /// another). Entry by entry with all the products at once, this was a
    /// third as long as a sweep on the 1,000-grain silo.
    pub fn first_pass(&mut self, plan: &Plan) -> Sums {
        let mut sums = Sums::default();
        let others = &plan.others[..plan.other_count];
        let n = self.x.len();
        let (x, g) = (&mut self.x[..n], &self.g[..n]);
        let (last_f, last_g) = (&mut self.last_f[..n], &mut self.last_g[..n]);
        let Some(slot) = plan.slot else {
            sums.norm = plain_column(x, g, last_f, last_g);
            return sums;
        };
        let (df, dg) = (&mut self.df[slot][..n], &mut self.dg[slot][..n]);
        [sums.norm, sums.square, sums.with_f] = new_column(x, g, last_f, last_g, df, dg);
        let new = &self.df[slot][..n];
        for (sum, &s) in sums.dots.iter_mut().zip(others) {
            *sum = dot(&self.df[s][..n], new);
        }
        sums
    }

    /// Writes the next iterate into x: G(x) − ΔG γ, or G(x).
    pub fn second_pass(&mut self, step: &Step) {
        self.x.copy_from_slice(self.g);
        if !step.mixes {
            return;
        }
        subtract_combination(self.x, step, &self.dg);
    }
}

/// Entries that follow the combination without entering its least
/// squares: for y linear in the iterate (NSGS's velocity v = v* + W Jᵀr),
/// the same combination of the y's of the last images is the y of the
/// combined iterate, y(G(x) − ΔG γ) = y(G(x)) − ΔY γ, where ΔY holds the
/// differences of y(G) as ΔG those of G. Each column costs one pass over
/// y, where moving y to the combined iterate through the map costs a pass
/// over every row of it.
#[derive(Debug, Clone, Default)]
pub struct Companion {
    /// ΔY columns, in [`Anderson`]'s slots.
    dy: Vec<f64>,
    /// y of the last image.
    last: Vec<f64>,
}

impl Companion {
    /// Forgets the history (as [`Anderson::reset`] does its own); the next
    /// y have `len` entries, over `anderson`'s slots.
    pub fn reset(&mut self, anderson: &Anderson, len: usize) {
        self.dy.resize(anderson.memory * len, 0.0);
        self.last.resize(len, 0.0);
    }

    /// `y` and the history's entries cut at `cut` into two pieces, for
    /// [`CompanionPiece::record`] and [`CompanionPiece::mix`] on any
    /// threads: the pieces are disjoint.
    pub fn pieces<'a>(&'a mut self, y: &'a mut [f64], cut: usize) -> [CompanionPiece<'a>; 2] {
        let n = self.last.len();
        assert!(
            y.len() == n,
            "Anderson's companion: {} entries after reset({n})",
            y.len()
        );
        let cuts = [cut.min(n), n];
        let [ya, yb, _] = three(y, cuts);
        let [la, lb, _] = three(&mut self.last, cuts);
        let [da, db, _] = columns(&mut self.dy, n, cuts);
        [
            CompanionPiece {
                y: ya,
                last: la,
                dy: da,
            },
            CompanionPiece {
                y: yb,
                last: lb,
                dy: db,
            },
        ]
    }
}

/// `v` cut at `cuts` (a ≤ b ≤ its length) into [..a], [a..b] and [b..].
fn three(v: &mut [f64], [a, b]: [usize; 2]) -> [&mut [f64]; 3] {
    let (ab, c) = v.split_at_mut(b);
    let (a, b) = ab.split_at_mut(a);
    [a, b, c]
}

/// Each column of `n` entries in `data` cut as [`three`] cuts, the
/// columns' pieces gathered by piece.
fn columns(data: &mut [f64], n: usize, cuts: [usize; 2]) -> [Vec<&mut [f64]>; 3] {
    let mut out: [Vec<&mut [f64]>; 3] = Default::default();
    if n > 0 {
        for column in data.chunks_exact_mut(n) {
            for (o, piece) in out.iter_mut().zip(three(column, cuts)) {
                o.push(piece);
            }
        }
    }
    out
}

/// A range of the companion's y with the history's entries of that range
/// ([`Companion::pieces`]).
pub struct CompanionPiece<'a> {
    y: &'a mut [f64],
    last: &'a mut [f64],
    dy: Vec<&'a mut [f64]>,
}

impl CompanionPiece<'_> {
    /// With y = y(G(x)) of the iterate `plan` was made for: its column
    /// (y − last y) in the plan's slot, and y kept as the last. Called for
    /// every iterate, as [`Piece::first_pass`] is.
    pub fn record(&mut self, plan: &Plan) {
        match plan.slot {
            Some(slot) => difference_column(self.y, self.last, self.dy[slot]),
            None => self.last.copy_from_slice(self.y),
        }
    }

    /// y moved to the combined iterate of `step`: y −= ΔY γ.
    pub fn mix(&mut self, step: &Step) {
        if !step.mixes {
            return;
        }
        subtract_combination(self.y, step, &self.dy);
    }
}

with_avx2! {
/// d = y − last, and last = y. The slices are of one length.
fn difference_column(y: &[f64], last: &mut [f64], d: &mut [f64]) {
    let n = y.len();
    let (last, d) = (&mut last[..n], &mut d[..n]);
    for i in 0..n {
        d[i] = y[i] - last[i];
        last[i] = y[i];
    }
}
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Jacobi on a symmetric positive definite system whose spectral radius
    /// is 0.99: plain iteration needs about 2,700 steps to 1e-12, Anderson
    /// with memory 5 about 215 (measured), to the same solution.
    #[test]
    fn accelerates_a_slow_linear_iteration_to_its_fixed_point() {
        let n = 20;
        // G(x) = H x + c with H = 0.99 · a rotation-free diagonal mix.
        let h: Vec<f64> = (0..n).map(|i| 0.99 * (i as f64 / (n - 1) as f64)).collect();
        let c: Vec<f64> = (0..n).map(|i| 1.0 + i as f64).collect();
        let exact: Vec<f64> = (0..n).map(|i| c[i] / (1.0 - h[i])).collect();
        let map = |x: &[f64]| -> Vec<f64> { (0..n).map(|i| h[i] * x[i] + c[i]).collect() };
        let solve = |memory: usize| {
            let mut anderson = Anderson::new(memory);
            anderson.reset(n);
            let mut x = vec![0.0; n];
            for iteration in 1..=10_000 {
                let mut g = map(&x);
                let error = (0..n)
                    .map(|i| (g[i] - exact[i]).abs() / exact[i])
                    .fold(0.0, f64::max);
                if error < 1e-12 {
                    return (iteration, g);
                }
                anderson.next(&mut x, &mut g);
            }
            panic!("no convergence with memory {memory}");
        };
        let (plain, _) = solve(0);
        let (accelerated, x) = solve(5);
        assert!(plain > 2_000, "plain iteration: {plain}");
        assert!(accelerated < plain / 10, "{accelerated} against {plain}");
        for i in 0..n {
            assert!((x[i] - exact[i]).abs() <= 1e-10 * exact[i]);
        }
    }

    /// The companion of a linear y = B x follows the combinations: after
    /// every iterate its y is B times the iterate, to rounding, through
    /// mixes, restarts on growth (a nonsmooth G: a kink at x₀ = 5) and a
    /// reset, cut at any place.
    #[test]
    fn a_companion_is_the_linear_image_of_every_iterate() {
        let (n, m) = (12, 5);
        let h: Vec<f64> = (0..n).map(|i| 0.95 * (i as f64 + 1.0) / n as f64).collect();
        let map = |x: &[f64]| -> Vec<f64> {
            (0..n)
                .map(|i| h[i] * x[(i + 1) % n] + 1.0 + i as f64 + 3.0 * (x[0] - 5.0).max(0.0))
                .collect()
        };
        let b: Vec<Vec<f64>> = (0..m)
            .map(|k| (0..n).map(|i| ((k * n + i) as f64 * 0.37).sin()).collect())
            .collect();
        let image = |x: &[f64]| -> Vec<f64> {
            b.iter()
                .map(|row| row.iter().zip(x).map(|(a, x)| a * x).sum())
                .collect()
        };
        for cut in [0, 2, m] {
            let mut anderson = Anderson::new(4);
            let mut companion = Companion::default();
            anderson.reset(n);
            companion.reset(&anderson, m);
            let mut x = vec![0.0; n];
            let mut mixes = 0;
            for iteration in 0..60 {
                if iteration == 30 {
                    anderson.reset(n);
                    companion.reset(&anderson, m);
                }
                let mut g = map(&x);
                let mut y = image(&g);
                let plan = anderson.plan();
                let sums = {
                    let [mut piece, ..] = anderson.pieces(&mut x, &mut g, [n; 2]);
                    piece.first_pass(&plan)
                };
                for mut piece in companion.pieces(&mut y, cut) {
                    piece.record(&plan);
                }
                let step = anderson.decide(&plan, sums);
                {
                    let [mut piece, ..] = anderson.pieces(&mut x, &mut g, [n; 2]);
                    piece.second_pass(&step);
                }
                for mut piece in companion.pieces(&mut y, cut) {
                    piece.mix(&step);
                }
                mixes += usize::from(step.mixes());
                let expected = image(&x);
                let scale = expected.iter().fold(1.0_f64, |s, v| s.max(v.abs()));
                for (got, want) in y.iter().zip(&expected) {
                    assert!(
                        (got - want).abs() <= 1e-12 * scale,
                        "iteration {iteration}, cut {cut}: {got} against {want}"
                    );
                }
            }
            assert!(mixes > 20, "{mixes} mixes");
        }
    }

    /// The column kernels on every length from empty to past two groups
    /// of lanes: each written entry is its definition to the bit (f = g −
    /// x, Δf = f − last f, Δg = g − last g, f and g kept), and the sums are
    /// ‖f‖², ‖Δf‖², Δfᵀf to rounding.
    #[test]
    fn the_column_kernels_meet_their_definitions_on_every_length() {
        let value = |i: usize, salt: f64| ((i as f64 + 1.0) * salt).sin() * (1.0 + i as f64);
        for n in 0..=11 {
            let x0: Vec<f64> = (0..n).map(|i| value(i, 0.7)).collect();
            let g: Vec<f64> = (0..n).map(|i| value(i, 1.3)).collect();
            let lf0: Vec<f64> = (0..n).map(|i| value(i, 2.9)).collect();
            let lg0: Vec<f64> = (0..n).map(|i| value(i, 0.3)).collect();
            let f: Vec<f64> = (0..n).map(|i| g[i] - x0[i]).collect();
            let d: Vec<f64> = (0..n).map(|i| f[i] - lf0[i]).collect();
            let close = |got: f64, want: f64, what: &str| {
                assert!(
                    (got - want).abs() <= 1e-14 * want.abs().max(1.0),
                    "n = {n}, {what}: {got} against {want}"
                );
            };
            let sum = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(a, b)| a * b).sum::<f64>();

            let (mut x, mut lf, mut lg) = (x0.clone(), lf0.clone(), lg0.clone());
            let (mut df, mut dg) = (vec![f64::NAN; n], vec![f64::NAN; n]);
            let [norm, square, with_f] = new_column(&mut x, &g, &mut lf, &mut lg, &mut df, &mut dg);
            for i in 0..n {
                assert_eq!(x[i].to_bits(), f[i].to_bits(), "n = {n}: f[{i}]");
                assert_eq!(df[i].to_bits(), d[i].to_bits(), "n = {n}: Δf[{i}]");
                assert_eq!(
                    dg[i].to_bits(),
                    (g[i] - lg0[i]).to_bits(),
                    "n = {n}: Δg[{i}]"
                );
                assert_eq!(lf[i].to_bits(), f[i].to_bits(), "n = {n}: last f[{i}]");
                assert_eq!(lg[i].to_bits(), g[i].to_bits(), "n = {n}: last g[{i}]");
            }
            close(norm, sum(&f, &f), "‖f‖²");
            close(square, sum(&d, &d), "‖Δf‖²");
            close(with_f, sum(&d, &f), "Δfᵀf");

            let (mut x, mut lf, mut lg) = (x0.clone(), lf0.clone(), lg0.clone());
            let norm = plain_column(&mut x, &g, &mut lf, &mut lg);
            for i in 0..n {
                assert_eq!(x[i].to_bits(), f[i].to_bits(), "n = {n}: plain f[{i}]");
                assert_eq!(
                    lf[i].to_bits(),
                    f[i].to_bits(),
                    "n = {n}: plain last f[{i}]"
                );
                assert_eq!(
                    lg[i].to_bits(),
                    g[i].to_bits(),
                    "n = {n}: plain last g[{i}]"
                );
            }
            close(norm, sum(&f, &f), "plain ‖f‖²");
        }
    }

    /// The combination of columns on lengths around its blocks of
    /// [`COMBINED`] entries: the bits of subtracting one column after
    /// another, for none to three columns in any slots.
    #[test]
    fn a_combination_is_its_columns_subtracted_in_turn() {
        let value = |i: usize, salt: f64| ((i as f64 + 0.5) * salt).cos() * (2.0 + i as f64);
        for n in [
            0,
            1,
            5,
            COMBINED - 1,
            COMBINED,
            COMBINED + 3,
            3 * COMBINED + 7,
        ] {
            let mut columns: Vec<Vec<f64>> = (0..4)
                .map(|c| (0..n).map(|i| value(i, 1.1 + c as f64)).collect())
                .collect();
            for count in 0..=3 {
                let mut step = Step {
                    gamma: [0.0; MAX_MEMORY],
                    slots: [0; MAX_MEMORY],
                    count,
                    mixes: true,
                };
                for k in 0..count {
                    step.gamma[k] = 0.3 - 0.7 * k as f64;
                    step.slots[k] = 3 - k;
                }
                let start: Vec<f64> = (0..n).map(|i| value(i, 0.37)).collect();
                let mut want = start.clone();
                for k in 0..count {
                    for (x, d) in want.iter_mut().zip(&columns[step.slots[k]]) {
                        *x -= step.gamma[k] * d;
                    }
                }
                let mut got = start;
                let views: Vec<&mut [f64]> = columns.iter_mut().map(|c| c.as_mut_slice()).collect();
                subtract_combination(&mut got, &step, &views);
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    assert_eq!(
                        g.to_bits(),
                        w.to_bits(),
                        "n = {n}, {count} columns: entry {i}"
                    );
                }
            }
        }
    }
}
