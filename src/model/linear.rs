//! Generalized linear systems in Glocker–Studer's form (2005, §3–4):
//! M q̈ + C q̇ + K q = f₀ + Σ a cos(ω t + φ), with unilateral contacts whose gap is
//! affine, g = g₀ + w_Nᵀ q, and whose friction acts along a constant w_T.
//!
//! The coordinates are named (the CSV gets `C` and `C.dot` per coordinate C).

use super::{Contact, ContactId, ContactJacobian, ImpactCoefficients, Other};
use nalgebra::{DMatrix, DVector};

/// A harmonic generalized force a cos(ω t + φ).
#[derive(Debug, Clone, PartialEq)]
pub struct Harmonic {
    /// Amplitude per coordinate, N.
    pub amplitude: DVector<f64>,
    /// Angular frequency ω, rad/s.
    pub omega: f64,
    /// Phase φ, rad.
    pub phase: f64,
}

/// A contact with affine gap g = g₀ + w_Nᵀ q and tangent direction w_T.
#[derive(Debug, Clone, PartialEq)]
pub struct AffineContact {
    /// Name for reports.
    pub name: String,
    /// g₀, m.
    pub g0: f64,
    /// w_N: the generalized normal.
    pub w_n: DVector<f64>,
    /// w_T: the generalized tangent (friction acts along ±w_T).
    pub w_t: DVector<f64>,
}

/// M, C, K, forces and contacts over named coordinates.
#[derive(Debug, Clone)]
pub struct LinearSystem {
    /// Coordinate names.
    pub coordinates: Vec<String>,
    /// Stiffness K.
    pub stiffness: DMatrix<f64>,
    /// Damping C.
    pub damping: DMatrix<f64>,
    /// Constant force f₀.
    pub constant_force: DVector<f64>,
    /// Harmonic forces.
    pub harmonics: Vec<Harmonic>,
    /// Unilateral contacts.
    pub contacts: Vec<AffineContact>,
    /// Newton's impact law per contact (parallel to `contacts`; default: the
    /// scene-wide values).
    pub impact: Vec<ImpactCoefficients>,
    mass: DMatrix<f64>,
    mass_inverse: DMatrix<f64>,
}

impl LinearSystem {
    /// Builds the system; `mass` must be symmetric positive definite (the scene
    /// loader checks it and reports the field), else `None`.
    pub fn new(
        coordinates: Vec<String>,
        mass: DMatrix<f64>,
        stiffness: DMatrix<f64>,
        damping: DMatrix<f64>,
        constant_force: DVector<f64>,
        harmonics: Vec<Harmonic>,
        contacts: Vec<AffineContact>,
    ) -> Option<Self> {
        let mass_inverse = mass.clone().cholesky()?.inverse();
        let impact = vec![ImpactCoefficients::default(); contacts.len()];
        Some(Self {
            impact,
            coordinates,
            stiffness,
            damping,
            constant_force,
            harmonics,
            contacts,
            mass,
            mass_inverse,
        })
    }

    /// Number of coordinates.
    pub fn dof(&self) -> usize {
        self.coordinates.len()
    }

    /// M.
    pub fn mass_matrix(&self) -> &DMatrix<f64> {
        &self.mass
    }

    /// M⁻¹.
    pub fn mass_inverse(&self) -> &DMatrix<f64> {
        &self.mass_inverse
    }

    /// f₀ + Σ a cos(ωt + φ) − K q − C v.
    pub fn forces(&self, q: &DVector<f64>, v: &DVector<f64>, t: f64) -> DVector<f64> {
        let mut k = &self.constant_force - &self.stiffness * q - &self.damping * v;
        for h in &self.harmonics {
            k += &h.amplitude * (h.omega * t + h.phase).cos();
        }
        k
    }

    /// ½ qᵀK q − f₀ᵀq, J.
    pub fn potential_energy(&self, q: &DVector<f64>) -> f64 {
        0.5 * q.dot(&(&self.stiffness * q)) - self.constant_force.dot(q)
    }

    /// The impact-law coefficients of contact `id` (its index is `id.a`).
    pub fn impact_coefficients(&self, id: &ContactId) -> ImpactCoefficients {
        self.impact.get(id.a).copied().unwrap_or_default()
    }

    /// The contacts with g ≤ margin; D = [w_T, −w_T].
    pub fn contacts(&self, q: &DVector<f64>, margin: f64) -> Vec<Contact> {
        self.contacts
            .iter()
            .enumerate()
            .filter_map(|(i, c)| {
                let gap = c.g0 + c.w_n.dot(q);
                (gap <= margin).then(|| {
                    let mut d = DMatrix::zeros(self.dof(), 2);
                    d.set_column(0, &c.w_t);
                    d.set_column(1, &(-&c.w_t));
                    Contact {
                        id: ContactId {
                            a: i,
                            b: Other::World,
                            feature: 0,
                            cut: 0,
                        },
                        gap,
                        jacobian: ContactJacobian::dense(&c.w_n, &d),
                        frame: None,
                    }
                })
            })
            .collect()
    }
}
