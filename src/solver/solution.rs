//! What one solve of a contact problem gave ([`ContactSolution`]), the one
//! type every form, method and scheme hands around, and how its unknowns are
//! laid out ([`Unknowns`]).

use super::planar_impact::PlanarImpulse;
use super::problem::Layout;
use crate::lcp::{Lcp, LcpStatus};
use nalgebra::DVector;

/// How the unknowns of a [`ContactSolution`] are laid out.
#[derive(Debug, Clone, PartialEq)]
pub enum Unknowns {
    /// The LCP (29): z = (β̃, c̃_n, λ̃), w = (ρ̃, σ̃, ζ̃), contact after contact
    /// in each block.
    Pyramid(Layout),
    /// Glocker–Studer's (33) arranged as (27): z = (Λ_N, Λ_R, ξ_L), w = (ξ_N,
    /// ξ_R, Λ_L), and each contact's impulses and slip recovered from them
    /// ((24)–(26)).
    Planar(Vec<PlanarImpulse>),
}

/// A solve that failed, as a scheme hands it to the driver.
pub type Failed = Box<ContactSolution>;

/// What one solve of a contact problem gave, whatever its form (29), (33)
/// or (24) and its method (Lemke on islands, on a dense tableau, on
/// equilibrated parts, or NSGS).
#[derive(Debug, Clone)]
pub struct ContactSolution {
    /// How it ended: `Solved` when every island was solved, else the status
    /// of the first island that was not.
    pub status: LcpStatus,
    /// The largest relative residual over the islands.
    pub residual: f64,
    /// Lemke pivots over every island and every attempt.
    pub pivots: usize,
    /// How z and w are laid out.
    pub unknowns: Unknowns,
    /// The unknowns; impulses in N·s.
    pub z: DVector<f64>,
    /// The slacks.
    pub w: DVector<f64>,
    /// The velocity after the contact impulses, v* + W J z.
    pub velocity: DVector<f64>,
    /// Unknowns of the LCP over the contacts that took part.
    pub lcp_size: usize,
    /// Independent LCPs solved.
    pub islands: usize,
    /// Size of the largest of them.
    pub largest_island: usize,
    /// Of the islands, those taken from an earlier solve of the same step
    /// with the same LCP, bit for bit (`lemke::memo`), instead of solved.
    pub reused: usize,
    /// NSGS sweeps (0 for Lemke).
    pub sweeps: usize,
    /// Which contacts took part, when the problem asked for
    /// [`ContactProblem::activation`] (the others carry no impulse).
    pub active: Option<Vec<bool>>,
    /// The LCP solved (block-diagonal over the islands, each with the
    /// regularization and right-hand side that solved it), when kept.
    pub lcp: Option<Lcp>,
}

impl ContactSolution {
    /// No contacts: nothing to solve, the velocity is v*.
    pub fn empty(free: &DVector<f64>) -> Self {
        Self::failed(free, Layout::of(&[]), LcpStatus::Solved, 0.0)
    }

    /// A solve that could not be posed (the joints' Schur complement does
    /// not exist), ending with `status`: no impulses, the velocity v*.
    pub fn failed(free: &DVector<f64>, layout: Layout, status: LcpStatus, residual: f64) -> Self {
        Self {
            status,
            residual,
            pivots: 0,
            unknowns: Unknowns::Pyramid(layout),
            z: DVector::zeros(layout.size()),
            w: DVector::zeros(layout.size()),
            velocity: free.clone(),
            lcp_size: layout.size(),
            islands: 0,
            largest_island: layout.size(),
            reused: 0,
            sweeps: 0,
            active: None,
            lcp: None,
        }
    }

    /// `Ok` when the step may go on with it ([`LcpStatus::advances`]), else
    /// `Err` with itself (for `?` in a scheme).
    pub fn solved(self) -> Result<Self, Failed> {
        if self.status.advances() {
            Ok(self)
        } else {
            Err(Box::new(self))
        }
    }

    /// The index of contact j's normal impulse in z (and of its normal
    /// velocity in w).
    pub fn normal_index(&self, j: usize) -> usize {
        match &self.unknowns {
            Unknowns::Pyramid(layout) => layout.normal(j),
            Unknowns::Planar(_) => j,
        }
    }

    /// The (29) layout; `None` for (33).
    pub fn layout(&self) -> Option<Layout> {
        match &self.unknowns {
            Unknowns::Pyramid(layout) => Some(*layout),
            Unknowns::Planar(_) => None,
        }
    }
}
