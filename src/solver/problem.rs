//! The contact problem a scheme poses for one solve ([`ContactProblem`]):
//! the LCP (29) of Stewart & Trinkle 1996 over a set of contacts, its
//! unknowns' layout ([`Layout`]) and the contacts that join only once the
//! velocity would close them ([`Activation`]).

use crate::model::{Contact, MassInverse};
use nalgebra::{DVector, Vector3};

/// The contact LCP (29) a scheme poses for one solve: the contacts, W (M⁻¹
/// or the joints' Schur complement), the velocity without contact impulses
/// and the scheme's right-hand-side terms.
pub struct ContactProblem<'a> {
    /// The contacts, in the order of the LCP's blocks.
    pub contacts: &'a [&'a Contact],
    /// W, the map from generalized impulse to velocity change.
    pub map: MassInverse<'a>,
    /// Generalized velocities of the model.
    pub dof: usize,
    /// v*, the velocity without contact impulses.
    pub free: &'a DVector<f64>,
    /// Added to each contact's normal row: γ/h (Stewart–Trinkle), ε_N γ_N^A
    /// (Moreau–Jean) or 0 (Anitescu–Potra).
    pub normal_terms: &'a [f64],
    /// Added to the friction rows, contact after contact (ε_T D̃ᵀu^A of
    /// Moreau–Jean); empty for none.
    pub friction_terms: &'a [f64],
    /// The scheme's relaxation of `normal_terms`, solved with the
    /// regularization when the LCP itself fails (Stewart–Trinkle's γ ≥ 0).
    pub relaxed_normal_terms: Option<&'a [f64]>,
    /// μ per contact.
    pub mu: &'a [f64],
    /// Moreau–Jean's predictive activation done inside the NSGS sweeps
    /// (see [`Activation`]); `None`: every contact takes part.
    pub activation: Option<Activation<'a>>,
    /// The unit vector opposite to gravity ([`crate::model::RigidSystem::up`]):
    /// NSGS on the circular cone sweeps the contacts from the lowest up.
    pub up: Vector3<f64>,
}

/// Contacts that take part only once the velocity would close them: a
/// contact j with `initially[j]` false carries no impulse until, before the
/// first sweep (at the warm start's velocity) or at one of the sweeps'
/// residual checks (every few sweeps), g_j + `lead`·γ_Nj(u) <
/// −`depth` at the current velocity u; from then on it takes part. The
/// solve ends when the residual is met and no contact joins at that check:
/// the fixed point of Moreau–Jean's rounds ([`super::moreau_jean`]), reached
/// without restarting the sweeps for each round. Joining at every check
/// rather than only at convergence lets a load travel through new contacts
/// in the same sweeps; a contact that an intermediate velocity closes joins
/// though the final one might not have (the silo's index set: the same
/// mean size, 8,079 unknowns against 8,078 with restarted rounds),
/// and then only holds u_N^E ≥ −ε_N u_N^A like any contact of 𝓗. Only NSGS
/// on block-diagonal W honours it ([`ContactSolver::activates`]).
#[derive(Debug, Clone, Copy)]
pub struct Activation<'a> {
    /// g_N at the point of prediction (q^M), per contact.
    pub gaps: &'a [f64],
    /// Whether each contact takes part from the start.
    pub initially: &'a [bool],
    /// γh: the gap predicted at u is g + γh·γ_N(u).
    pub lead: f64,
    /// A predicted gap below −depth activates, m.
    pub depth: f64,
}

/// The block layout of the assembled LCP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
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
    /// The indices of the slip speeds λ̃ (rows μ̃c̃_n − Ẽᵀβ̃, in impulse
    /// units).
    pub fn lambdas(&self) -> std::ops::Range<usize> {
        self.friction + self.contacts..self.size()
    }
    /// Index of λ of contact j.
    pub fn lambda(&self, j: usize) -> usize {
        self.friction + self.contacts + j
    }
}

/// The first friction row of each contact in (29).
pub fn friction_starts(contacts: &[&Contact]) -> Vec<usize> {
    let mut starts = Vec::with_capacity(contacts.len());
    let mut row = 0;
    for c in contacts {
        starts.push(row);
        row += c.jacobian.friction_count();
    }
    starts
}
