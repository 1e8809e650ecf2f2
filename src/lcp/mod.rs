//! Linear complementarity problems and their solver.
//!
//! Every stepper in contactlab reduces one time step to LCP(M, q): find `z ≥ 0`
//! with `w = M z + q ≥ 0` and `zᵀw = 0` (Stewart–Trinkle 1996, eq. (17) and (29)).
//! This module holds the problem type ([`Lcp`]), the result type
//! ([`LcpSolution`], [`LcpStatus`]), the check every caller can run on what it
//! got ([`Validation`]), Lemke's method ([`lemke`]) and the Siconos `.dat`
//! exchange format ([`siconos`]).

pub mod lemke;
pub mod siconos;

use nalgebra::{DMatrix, DVector};
use std::fmt;
use thiserror::Error;

pub use lemke::{LemkeOptions, solve};

/// A dense linear complementarity problem LCP(M, q).
#[derive(Debug, Clone, PartialEq)]
pub struct Lcp {
    /// The n×n matrix M.
    pub m: DMatrix<f64>,
    /// The vector q of length n.
    pub q: DVector<f64>,
}

/// Why an LCP or a solver option was rejected before any pivoting.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum LcpError {
    /// M is not square or q does not match it.
    #[error("LCP dimensions do not match: M is {rows}×{cols}, q has {q_len} entries")]
    Dimension {
        /// Rows of M.
        rows: usize,
        /// Columns of M.
        cols: usize,
        /// Length of q.
        q_len: usize,
    },
    /// M or q holds a NaN or an infinity.
    #[error("LCP data is not finite: {what} has a NaN or infinite entry")]
    NotFinite {
        /// `"M"` or `"q"`.
        what: &'static str,
    },
    /// The covering vector has the wrong length or a non-positive entry.
    #[error("covering vector must have {expected} strictly positive finite entries")]
    Covering {
        /// The problem size.
        expected: usize,
    },
    /// A warm-start basis names a variable outside 0..n.
    #[error("warm-start basis names variable {index}, but the problem has only {n}")]
    WarmStart {
        /// The offending index.
        index: usize,
        /// The problem size.
        n: usize,
    },
}

impl Lcp {
    /// Builds LCP(M, q), checking that M is square, q matches and all data are finite.
    pub fn new(m: DMatrix<f64>, q: DVector<f64>) -> Result<Self, LcpError> {
        if m.nrows() != m.ncols() || m.nrows() != q.len() {
            return Err(LcpError::Dimension {
                rows: m.nrows(),
                cols: m.ncols(),
                q_len: q.len(),
            });
        }
        if m.iter().any(|x| !x.is_finite()) {
            return Err(LcpError::NotFinite { what: "M" });
        }
        if q.iter().any(|x| !x.is_finite()) {
            return Err(LcpError::NotFinite { what: "q" });
        }
        Ok(Self { m, q })
    }

    /// The problem size n.
    pub fn size(&self) -> usize {
        self.q.len()
    }

    /// The data scale residuals are measured against: max(1, ‖q‖∞).
    pub fn scale(&self) -> f64 {
        self.q.amax().max(1.0)
    }

    /// Checks a candidate `z` against this problem: recomputes `w = M z + q`
    /// (rather than trusting the solver's `w`) and reports the violations.
    pub fn validate(&self, z: &DVector<f64>) -> Validation {
        let w = &self.m * z + &self.q;
        Validation::of(z, &w, self.scale())
    }
}

/// How Lemke's method ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LcpStatus {
    /// A complementary basis was reached: `z`, `w` solve the problem.
    Solved,
    /// The entering column had no positive entry: the algorithm ran off on a
    /// secondary ray. For copositive-plus M this proves the LCP has no solution.
    RayTermination,
    /// The pivot limit was reached before termination.
    MaxPivots,
    /// The basis became singular or the final solution failed its residual check.
    NumericalFailure,
}

impl LcpStatus {
    /// The name printed by `contactlab lcp` and the CSV.
    pub fn name(self) -> &'static str {
        match self {
            Self::Solved => "Solved",
            Self::RayTermination => "RayTermination",
            Self::MaxPivots => "MaxPivots",
            Self::NumericalFailure => "NumericalFailure",
        }
    }

    /// One sentence a user can act on.
    pub fn reason(self) -> &'static str {
        match self {
            Self::Solved => "a complementary solution was found",
            Self::RayTermination => {
                "Lemke's method ended on a ray: the LCP has no solution this method can reach"
            }
            Self::MaxPivots => "the pivot limit was reached; raise it or check the data",
            Self::NumericalFailure => {
                "the basis became singular, the result failed its residual check, or the step overflowed (an explicit scheme past its stability limit)"
            }
        }
    }
}

impl fmt::Display for LcpStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a solve produced.
#[derive(Debug, Clone, PartialEq)]
pub struct LcpSolution {
    /// The unknowns z (only meaningful when `status` is `Solved`).
    pub z: DVector<f64>,
    /// The slacks w = M z + q, recomputed from `z`.
    pub w: DVector<f64>,
    /// How the solve ended.
    pub status: LcpStatus,
    /// Pivots taken, counting the first one that brings in the artificial variable
    /// (and, after a failed warm start, the pivots of both attempts).
    pub pivots: usize,
    /// max(max(−z), max(−w), max|zᵢwᵢ|) relative to max(1, ‖q‖∞).
    pub residual: f64,
    /// Indices i whose zᵢ is basic at the end: pass it back as a warm start.
    pub basis: Vec<usize>,
    /// Whether the warm start given in the options produced this result.
    pub warm_started: bool,
}

impl LcpSolution {
    /// Checks `z`, `w` as they stand (see [`Lcp::validate`] to recompute `w`).
    pub fn validate(&self, scale: f64) -> Validation {
        Validation::of(&self.z, &self.w, scale)
    }
}

/// The three ways a pair (z, w) can fail to be complementary.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Validation {
    /// max(0, max(−zᵢ)): how negative z gets.
    pub max_neg_z: f64,
    /// max(0, max(−wᵢ)): how negative w gets.
    pub max_neg_w: f64,
    /// max |zᵢ wᵢ|.
    pub max_complementarity: f64,
    /// The scale the relative residual divides by.
    pub scale: f64,
}

impl Validation {
    fn of(z: &DVector<f64>, w: &DVector<f64>, scale: f64) -> Self {
        let neg = |v: &DVector<f64>| v.iter().fold(0.0_f64, |a, &x| a.max(-x));
        let comp = z
            .iter()
            .zip(w.iter())
            .fold(0.0_f64, |a, (&zi, &wi)| a.max((zi * wi).abs()));
        Self {
            max_neg_z: neg(z),
            max_neg_w: neg(w),
            max_complementarity: comp,
            scale,
        }
    }

    /// The largest of the three violations (absolute).
    pub fn worst(&self) -> f64 {
        self.max_neg_z
            .max(self.max_neg_w)
            .max(self.max_complementarity)
    }

    /// [`Self::worst`] divided by the data scale.
    pub fn relative(&self) -> f64 {
        self.worst() / self.scale
    }
}
