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
            memory,
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
    pub fn next(&mut self, x: &mut [f64], g: &[f64]) -> bool {
        assert!(
            x.len() == self.len && g.len() == self.len,
            "Anderson::next: vectors of {} and {} entries after reset({})",
            x.len(),
            g.len(),
            self.len
        );
        // f = g − x, kept in x until the next iterate is written there.
        let mut norm = 0.0;
        for (xi, gi) in x.iter_mut().zip(g) {
            *xi = gi - *xi;
            norm += *xi * *xi;
        }
        let f = x;
        let restart = self.restarts(norm);
        if self.memory == 0 || restart || !norm.is_finite() || self.last_norm.is_none() {
            self.count = 0;
            self.oldest = 0;
            self.remember(f, g, norm);
            f.copy_from_slice(g);
            return false;
        }
        self.push(f, g);
        self.remember(f, g, norm);
        let mixed = self.mix(f, g);
        if !mixed {
            f.copy_from_slice(g);
        }
        mixed
    }

    /// The safeguards at an iterate with ‖f‖² = `norm`: whether the history
    /// restarts from it, G(x) being the next iterate.
    /// - Growth: a residual larger than the last one restarts (Walker & Ni
    ///   §5's restarted variants). Rejecting the combination instead and
    ///   going back to the G it replaced was tried: the acceleration needs
    ///   the iterates that are worse for a sweep or two on the way (tower.ron
    ///   at 1e-8 gained nothing with it).
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

    /// Appends the column (f − last f, g − last g), evicting the oldest
    /// when the memory is full, and its row of the Gram matrix.
    fn push(&mut self, f: &[f64], g: &[f64]) {
        let (m, n) = (self.memory, self.len);
        let slot = if self.count < m {
            let s = (self.oldest + self.count) % m;
            self.count += 1;
            s
        } else {
            let s = self.oldest;
            self.oldest = (self.oldest + 1) % m;
            s
        };
        let at = slot * n;
        let (mut square, mut with_f) = (0.0, 0.0);
        for i in 0..n {
            let d = f[i] - self.last_f[i];
            self.df[at + i] = d;
            self.dg[at + i] = g[i] - self.last_g[i];
            square += d * d;
            with_f += d * f[i];
        }
        for s in self.slots() {
            if s == slot {
                continue;
            }
            let value = dot(&self.df[s * n..(s + 1) * n], &self.df[at..at + n]);
            self.gram[s * m + slot] = value;
            self.gram[slot * m + s] = value;
            self.rhs[s] += value;
        }
        self.gram[slot * m + slot] = square;
        self.rhs[slot] = with_f;
    }

    /// The slots in use, oldest first.
    fn slots(&self) -> impl Iterator<Item = usize> + use<> {
        let (m, oldest) = (self.memory, self.oldest);
        (0..self.count).map(move |i| (oldest + i) % m)
    }

    /// Writes G(x) − ΔG γ into `out` when the normal equations have a
    /// finite solution.
    fn mix(&self, out: &mut [f64], g: &[f64]) -> bool {
        let (m, n, c) = (self.memory, self.len, self.count);
        let slots: Vec<usize> = self.slots().collect();
        let mut a = nalgebra::DMatrix::<f64>::zeros(c, c);
        let mut b = nalgebra::DVector::<f64>::zeros(c);
        let mut scale: f64 = 0.0;
        for (i, &si) in slots.iter().enumerate() {
            for (j, &sj) in slots.iter().enumerate() {
                a[(i, j)] = self.gram[si * m + sj];
            }
            scale = scale.max(a[(i, i)]);
            b[i] = self.rhs[si];
        }
        if !(scale > 0.0 && scale.is_finite()) {
            return false;
        }
        for i in 0..c {
            a[(i, i)] += 1e-12 * scale;
        }
        let Some(gamma) = a.cholesky().map(|ch| ch.solve(&b)) else {
            return false;
        };
        if !gamma.iter().all(|v| v.is_finite()) {
            return false;
        }
        out.copy_from_slice(g);
        for (i, &si) in slots.iter().enumerate() {
            let column = &self.dg[si * n..(si + 1) * n];
            for (o, d) in out.iter_mut().zip(column) {
                *o -= gamma[i] * d;
            }
        }
        true
    }

    /// Keeps f and g as the last iterate's.
    fn remember(&mut self, f: &[f64], g: &[f64], norm: f64) {
        self.last_f.copy_from_slice(f);
        self.last_g.copy_from_slice(g);
        self.last_norm = Some(norm);
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
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
                let g = map(&x);
                let error = (0..n)
                    .map(|i| (g[i] - exact[i]).abs() / exact[i])
                    .fold(0.0, f64::max);
                if error < 1e-12 {
                    return (iteration, g);
                }
                anderson.next(&mut x, &g);
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
}
