//! The LCP (29) of Stewart & Trinkle 1996 for p contacts, shared by the steppers
//! that use the polyhedral friction pyramid.
//!
//! Unknowns z = (β̃, c̃_n, λ̃), slacks w = (ρ̃, σ̃, ζ̃):
//!
//! ```text
//! ⎡ D̃ᵀM⁻¹D̃   D̃ᵀM⁻¹ñ   Ẽ ⎤ ⎡β̃  ⎤   ⎡ D̃ᵀ v*        ⎤
//! ⎢ ñᵀM⁻¹D̃   ñᵀM⁻¹ñ   0 ⎥ ⎢c̃_n⎥ + ⎢ ñᵀ v* + γ̃/h   ⎥ = w ≥ 0,  z ≥ 0,  zᵀw = 0
//! ⎣ −Ẽᵀ       μ̃        0 ⎦ ⎣λ̃  ⎦   ⎣ 0             ⎦
//! ```
//!
//! with v* = v + h M⁻¹k the velocity without contact impulses and γ̃ the gap
//! term per contact (for Stewart–Trinkle (ñᵀqˡ − α̃₀), for velocity-level schemes
//! zero or a restitution term).

use crate::lcp::Lcp;
use crate::model::Contact;
use nalgebra::{DMatrix, DVector};

/// The block layout of the assembled LCP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Number of contacts p.
    pub contacts: usize,
    /// Total friction directions Σ k_j (the β block size).
    pub friction: usize,
}

impl Layout {
    /// LCP size Σk + 2p.
    pub fn size(&self) -> usize {
        self.friction + 2 * self.contacts
    }
    /// Index of c_n of contact j.
    pub fn normal(&self, j: usize) -> usize {
        self.friction + j
    }
    /// Index of λ of contact j.
    pub fn lambda(&self, j: usize) -> usize {
        self.friction + self.contacts + j
    }
}

/// The generalized impulse matrix J = [D̃ ñ] (β columns first, then normals) and
/// M⁻¹J, kept to turn the solution into a velocity change.
pub struct Impulses {
    /// [D̃ ñ].
    pub jacobian: DMatrix<f64>,
    /// M⁻¹ [D̃ ñ].
    pub minv_jacobian: DMatrix<f64>,
    /// Block layout.
    pub layout: Layout,
}

impl Impulses {
    /// Stacks the contacts' friction directions and normals.
    pub fn new(contacts: &[&Contact], mass_inverse: &DMatrix<f64>, dof: usize) -> Self {
        let friction: usize = contacts.iter().map(|c| c.friction.ncols()).sum();
        let layout = Layout {
            contacts: contacts.len(),
            friction,
        };
        let mut jacobian = DMatrix::zeros(dof, friction + contacts.len());
        let mut col = 0;
        for c in contacts {
            let k = c.friction.ncols();
            jacobian.view_mut((0, col), (dof, k)).copy_from(&c.friction);
            col += k;
        }
        for (j, c) in contacts.iter().enumerate() {
            jacobian.set_column(friction + j, &c.normal);
        }
        let minv_jacobian = apply_mass_inverse(mass_inverse, &jacobian);
        Self {
            jacobian,
            minv_jacobian,
            layout,
        }
    }

    /// The LCP (29): `free` is v* = v + h M⁻¹k, `gap_terms` the γ̃/h per contact,
    /// `mu` the friction coefficient per contact.
    pub fn lcp(
        &self,
        contacts: &[&Contact],
        free: &DVector<f64>,
        gap_terms: &[f64],
        mu: &[f64],
    ) -> Lcp {
        let layout = self.layout;
        let (nb, p) = (layout.friction, layout.contacts);
        let size = layout.size();
        let mut m = DMatrix::zeros(size, size);
        // The symmetric (β, c_n) block Jᵀ M⁻¹ J.
        let delassus = self.jacobian.tr_mul(&self.minv_jacobian);
        m.view_mut((0, 0), (nb + p, nb + p)).copy_from(&delassus);
        let mut row = 0;
        for (j, c) in contacts.iter().enumerate() {
            for _ in 0..c.friction.ncols() {
                m[(row, layout.lambda(j))] = 1.0; // Ẽ
                m[(layout.lambda(j), row)] = -1.0; // −Ẽᵀ
                row += 1;
            }
            m[(layout.lambda(j), layout.normal(j))] = mu[j]; // μ̃
        }
        let mut q = DVector::zeros(size);
        let jt_free = self.jacobian.tr_mul(free);
        q.rows_mut(0, nb + p).copy_from(&jt_free);
        for j in 0..p {
            q[layout.normal(j)] += gap_terms[j];
        }
        Lcp { m, q }
    }

    /// The velocity change M⁻¹(D̃β̃ + ñc̃_n) for a solution z.
    pub fn velocity_change(&self, z: &DVector<f64>) -> DVector<f64> {
        let n = self.layout.friction + self.layout.contacts;
        &self.minv_jacobian * z.rows(0, n)
    }
}

/// M⁻¹ X, exploiting a diagonal M⁻¹ (rigid bodies) when there is one.
pub fn apply_mass_inverse(mass_inverse: &DMatrix<f64>, x: &DMatrix<f64>) -> DMatrix<f64> {
    let n = mass_inverse.nrows();
    let diagonal = (0..n).all(|i| (0..n).all(|j| i == j || mass_inverse[(i, j)] == 0.0));
    if diagonal {
        let mut out = x.clone();
        for (i, mut row) in out.row_iter_mut().enumerate() {
            row *= mass_inverse[(i, i)];
        }
        out
    } else {
        mass_inverse * x
    }
}
