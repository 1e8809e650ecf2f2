//! How far ahead a contact search looks: a distance every pair gets, plus
//! each moving body's own reach over the step.
//!
//! A scheme linearizes its contacts at the start of a step (Stewart–Trinkle
//! §3.3, Moreau–Jean's index set at q^M), so a search must find every pair
//! the step's velocities can bring together. One distance for the whole
//! scene, taken from the fastest body, does that, but it grows with the
//! number of bodies: the more bodies, the faster the fastest one (a pile of
//! 200 bodies fell with a margin of 0.15 m against 0.03 m for its mean
//! body), and every body then searches that far, which made the narrow
//! phase's work per body three times larger at N = 200 than at N = 22. Per
//! body the reach is that body's own: a pair looks as far as the faster of
//! its two bodies reaches, which is the scene-wide distance for the pairs of
//! the fastest body and never more for any.

/// The margin of one search, m. `Copy`: the reaches are borrowed from the
/// stepper's storage ([`Reaches`]).
#[derive(Debug, Clone, Copy)]
pub struct Margin<'a> {
    fixed: f64,
    /// Per body (the model's body indices), its reach; empty for none.
    reach: &'a [f64],
}

impl From<f64> for Margin<'_> {
    fn from(margin: f64) -> Self {
        Self::uniform(margin)
    }
}

impl<'a> Margin<'a> {
    /// The same distance for every pair.
    pub fn uniform(margin: f64) -> Self {
        Self {
            fixed: margin,
            reach: &[],
        }
    }

    /// `fixed` for every pair plus the faster body's reach.
    pub fn with_reach(fixed: f64, reach: &'a [f64]) -> Self {
        Self { fixed, reach }
    }

    fn reach(&self, i: usize) -> f64 {
        self.reach.get(i).copied().unwrap_or(0.0)
    }

    /// The margin of body i against a static surface (or a fixed body).
    pub fn body(&self, i: usize) -> f64 {
        self.fixed + self.reach(i)
    }

    /// The margin of the pair (i, j): the faster body's reach.
    pub fn pair(&self, i: usize, j: usize) -> f64 {
        self.fixed + self.reach(i).max(self.reach(j))
    }

    /// How far body i's box is padded in the broad phase: two boxes padded
    /// so meet whenever their bodies come within [`Self::pair`] (the pads
    /// add up to `fixed` plus both reaches, at least the larger one).
    pub fn pad(&self, i: usize) -> f64 {
        (0.5 * self.fixed + self.reach(i)).max(0.0)
    }

    /// The largest margin of any pair: the margin of a system without
    /// bodies (a linear system's contacts).
    pub fn widest(&self) -> f64 {
        self.fixed + self.reach.iter().fold(0.0_f64, |m, &r| m.max(r))
    }

    /// Whether every pair has the same margin.
    pub fn is_uniform(&self) -> bool {
        self.reach.iter().all(|&r| r == 0.0)
    }
}

/// The storage of a step's reaches, kept between steps.
#[derive(Debug, Clone, Default)]
pub struct Reaches {
    fixed: f64,
    reach: Vec<f64>,
}

impl Reaches {
    /// Sets the margin: `fixed` plus, for body i, `reach(i)` (for `bodies`
    /// bodies).
    pub fn set(&mut self, fixed: f64, bodies: usize, reach: impl Fn(usize) -> f64) {
        self.fixed = fixed;
        self.reach.clear();
        self.reach.extend((0..bodies).map(reach));
    }

    /// The margin set last.
    pub fn margin(&self) -> Margin<'_> {
        Margin::with_reach(self.fixed, &self.reach)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Padded boxes meet whenever the pair's margin says they may touch,
    /// and a pair never looks further than its faster body reaches.
    #[test]
    fn pads_cover_the_pair_margin() {
        let reach = [0.0, 0.3, 0.05];
        let m = Margin::with_reach(0.02, &reach);
        for i in 0..3 {
            for j in 0..3 {
                assert!(m.pad(i) + m.pad(j) >= m.pair(i, j) - 1e-15);
                assert!(m.pair(i, j) <= m.widest());
            }
        }
        assert_eq!(m.pair(0, 2), 0.07);
        assert_eq!(m.body(1), 0.32);
        assert_eq!(Margin::from(0.1).pair(4, 7), 0.1);
        assert!(Margin::from(0.1).is_uniform() && !m.is_uniform());
    }
}
