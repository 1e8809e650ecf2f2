//! Moreau–Jean's position guard: the nearest displacement, in the metric of
//! M, that keeps a set of linearized gaps above their floors.
//!
//! The midpoint rule moves q by (h/2)u^A before it looks at any contact
//! (Glocker & Studer 2005 §5, step 2), and by (h/2)u^E after the impact
//! law; held on velocity level only, a contact that either half-step
//! carries past touching stays overlapped by up to (h/2)|γ_N|, and a body
//! faster than its obstacle is thick passes it. The guard moves positions,
//! never velocities, as the projections of Anitescu & Potra 2002 §2.3.4 do:
//! for contacts i with linearized gaps gᵢ(δ) = bᵢ + nᵢᵀδ it finds
//!
//!   δ = M⁻¹Nλ,  0 ≤ λ ⟂ b + NᵀM⁻¹Nλ − f ≥ 0,
//!
//! the nearest δ (in ‖·‖_M) with every gᵢ(δ) ≥ fᵢ, by projected
//! successive over-relaxation on λ ([`RELAXATION`]). Kinetic energy is
//! untouched.

use crate::model::Contact;
use nalgebra::DVector;

/// Projected sweeps over the working set, at most, before it
/// is checked against every contact again.
pub const SWEEPS: usize = 100;

/// Times the working set may grow (each after a full check).
pub const ROUNDS: usize = 20;

/// The sweeps' over-relaxation ω: each visit moves λᵢ by ω times the step
/// that meets its own target. Projected SOR converges to the same λ for
/// 0 < ω < 2 on the symmetric positive semidefinite NᵀM⁻¹N (Cryer 1971,
/// SIAM J. Control 9; Mangasarian 1977, J. Optim. Theory Appl. 22). A lift
/// carries down a column of grains one contact a sweep, and over-relaxing
/// carries it further.
pub const RELAXATION: f64 = 1.5;

/// The work space of a guard, kept between steps.
#[derive(Debug, Clone, Default)]
pub struct Guard {
    /// How far each linearized gap is above its target at δ = 0 (≥ 0 for a
    /// gap the guard only keeps from going deeper).
    slack: Vec<f64>,
    /// nᵢᵀM⁻¹nᵢ.
    weight: Vec<f64>,
    /// λᵢ.
    lambda: Vec<f64>,
    /// The contacts the sweeps visit.
    working: Vec<usize>,
    /// Whether each contact is among them.
    visited: Vec<bool>,
}

impl Guard {
    /// The displacement δ (velocity coordinates), for a diagonal M⁻¹
    /// `inverse_mass`, that lifts every gap `base(i)` + nᵢᵀδ of `contacts`
    /// that is below `floor(i)` by more than `depth(i)` (m) back onto its
    /// floor, and takes no other gap deeper than the lesser of its base and
    /// floor; `None` when no gap is that far below its floor. The targets
    /// are met within `tolerance` (m), or as nearly as [`SWEEPS`] sweeps in
    /// each of [`ROUNDS`] rounds reach: the sweeps run over the lifted
    /// contacts, then every contact is checked and those the lift took
    /// deeper join them.
    pub fn lift(
        &mut self,
        contacts: &[Contact],
        base: impl Fn(&Contact) -> f64,
        floor: impl Fn(&Contact) -> f64,
        depth: impl Fn(&Contact) -> f64,
        inverse_mass: &DVector<f64>,
        tolerance: f64,
    ) -> Option<DVector<f64>> {
        self.slack.clear();
        self.working.clear();
        self.visited.clear();
        for (i, c) in contacts.iter().enumerate() {
            let slack = base(c) - floor(c);
            let lifted = slack < -depth(c);
            self.slack.push(if lifted { slack } else { slack.max(0.0) });
            self.visited.push(lifted);
            if lifted {
                self.working.push(i);
            }
        }
        if self.working.is_empty() {
            return None;
        }
        let diagonal = inverse_mass.as_slice();
        // Computed when a contact is first visited.
        self.weight.clear();
        self.weight.resize(contacts.len(), f64::NAN);
        self.lambda.clear();
        self.lambda.resize(contacts.len(), 0.0);
        let mut delta = DVector::zeros(inverse_mass.len());
        for _ in 0..ROUNDS {
            for _ in 0..SWEEPS {
                let mut worst = 0.0_f64;
                for &i in &self.working {
                    let c = &contacts[i];
                    if self.weight[i].is_nan() {
                        self.weight[i] = c.jacobian.self_coupling::<1>(diagonal)[0][0];
                    }
                    let weight = self.weight[i];
                    if weight.is_nan() || weight <= 0.0 {
                        continue;
                    }
                    let above = self.slack[i] + c.jacobian.normal_dot(&delta);
                    let lambda = (self.lambda[i] - RELAXATION * above / weight).max(0.0);
                    let change = lambda - self.lambda[i];
                    // A gap below its target, or one the visit moves (an
                    // over-relaxed λ overshoots and is taken back).
                    worst = worst.max(-above).max(change.abs() * weight);
                    if change != 0.0 {
                        self.lambda[i] = lambda;
                        c.jacobian.add_weighted_row(0, change, diagonal, &mut delta);
                    }
                }
                if worst <= tolerance {
                    break;
                }
            }
            let before = self.working.len();
            for (i, c) in contacts.iter().enumerate() {
                if !self.visited[i] && self.slack[i] + c.jacobian.normal_dot(&delta) < -tolerance {
                    self.visited[i] = true;
                    self.working.push(i);
                }
            }
            if self.working.len() == before {
                break;
            }
        }
        delta.iter().all(|x| x.is_finite()).then_some(delta)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ContactId, ContactJacobian, Other};
    use nalgebra::DMatrix;

    fn contact(normal: &[f64], gap: f64) -> Contact {
        let n = DVector::from_column_slice(normal);
        Contact {
            id: ContactId {
                a: 0,
                b: Other::World,
                feature: 0,
                cut: 0,
            },
            gap,
            jacobian: ContactJacobian::dense(&n, &DMatrix::zeros(n.len(), 0)),
            frame: None,
        }
    }

    /// One gap below its floor is lifted onto it, within the tolerance,
    /// along M⁻¹n.
    #[test]
    fn one_gap_is_lifted_onto_its_floor() {
        let contacts = [contact(&[1.0, 0.0], -0.5)];
        let inverse_mass = DVector::from_vec(vec![0.5, 1.0]);
        let mut guard = Guard::default();
        let delta = guard
            .lift(
                &contacts,
                |c| c.gap,
                |_| 0.0,
                |_| 1e-9,
                &inverse_mass,
                1e-12,
            )
            .expect("lifted");
        assert!(
            (delta[0] - 0.5).abs() <= 1e-12 && delta[1] == 0.0,
            "{delta}"
        );
    }

    /// Two bodies pressed into each other and into a wall: the solution of
    /// the LCP (closed form: both constraints tight), not of each alone.
    #[test]
    fn coupled_gaps_reach_the_lcp_solution() {
        // Body 1 (x₁) against a wall at 0, body 2 (x₂) against body 1:
        // g₁ = x₁ + δ₁ ≥ 0, g₂ = (x₂ − x₁) + δ₂ − δ₁ ≥ 0, unit masses.
        let contacts = [contact(&[1.0, 0.0], -0.1), contact(&[-1.0, 1.0], -0.2)];
        let inverse_mass = DVector::from_vec(vec![1.0, 1.0]);
        let mut guard = Guard::default();
        let delta = guard
            .lift(
                &contacts,
                |c| c.gap,
                |_| 0.0,
                |_| 1e-11,
                &inverse_mass,
                1e-14,
            )
            .expect("lifted");
        // Tight: δ₁ = 0.1, δ₂ − δ₁ = 0.2.
        assert!((delta[0] - 0.1).abs() < 1e-12, "{delta}");
        assert!((delta[1] - 0.3).abs() < 1e-12, "{delta}");
    }

    /// Only a gap past its depth is lifted; one the lift would take deeper
    /// than it was joins and holds (closed form: both tight).
    #[test]
    fn a_gap_within_its_depth_is_kept_not_lifted() {
        // g₁ = −0.5 + δ₁ is lifted; g₂ = −0.01 + δ₂ − δ₁ is within its depth
        // (0.1) and may not go deeper than −0.01: δ₂ = δ₁ = 0.5.
        let contacts = [contact(&[1.0, 0.0], -0.5), contact(&[-1.0, 1.0], -0.01)];
        let inverse_mass = DVector::from_vec(vec![1.0, 1.0]);
        let mut guard = Guard::default();
        let delta = guard
            .lift(&contacts, |c| c.gap, |_| 0.0, |_| 0.1, &inverse_mass, 1e-14)
            .expect("lifted");
        assert!(
            (delta[0] - 0.5).abs() < 1e-12 && (delta[1] - 0.5).abs() < 1e-12,
            "{delta}"
        );
        assert!(
            guard
                .lift(
                    &contacts[1..],
                    |c| c.gap,
                    |_| 0.0,
                    |_| 0.1,
                    &inverse_mass,
                    1e-14
                )
                .is_none()
        );
    }

    /// Gaps above their floors, or an immovable pair, leave q alone.
    #[test]
    fn nothing_below_its_floor_is_no_displacement() {
        let contacts = [contact(&[1.0], 0.01)];
        let mut guard = Guard::default();
        let inverse_mass = DVector::from_vec(vec![1.0]);
        assert!(
            guard
                .lift(&contacts, |c| c.gap, |_| 0.0, |_| 0.0, &inverse_mass, 0.0)
                .is_none()
        );
        let fixed = DVector::from_vec(vec![0.0]);
        let delta = guard
            .lift(&contacts, |c| c.gap, |_| 1.0, |_| 0.0, &fixed, 0.0)
            .expect("a displacement, zero");
        assert_eq!(delta[0], 0.0);
    }
}
