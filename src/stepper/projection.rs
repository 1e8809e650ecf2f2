//! The position projection of Anitescu–Potra §2.3.4: after a velocity-level
//! step, q is moved back onto the joints Θ(q) = 0 and the theoretically active
//! contacts Φ(q) = 0 (the equality form the paper uses in §3), nearest in the
//! metric of M. Velocities are left alone, so the energy bound of Theorem 2.4
//! is not disturbed when only dampers are stiff.

use super::settings::StepSettings;
use crate::collision;
use crate::model::{Contact, ContactId, Model};
use crate::params::Params;
use nalgebra::{DMatrix, DVector};
use std::collections::BTreeSet;

/// Projection of §2.3.4 restricted to equalities (as in the paper's §3): the
/// nearest q in the metric of M with Θ(q) = 0, and Φ(q) = 0 for the active
/// contacts that penetrate and for the `holding` ones (normal impulse in the
/// last solve), by Gauss–Newton steps Δ = −M⁻¹J (JᵀM⁻¹J)⁺ c in velocity
/// coordinates, at most [`StepSettings::projection_iterations`] of them.
/// Velocities are kept.
pub fn project(
    model: &Model,
    params: &Params,
    settings: &StepSettings,
    q: &DVector<f64>,
    active: &BTreeSet<ContactId>,
    holding: &BTreeSet<ContactId>,
) -> DVector<f64> {
    let scale = model.length_scale().max(1.0);
    let reach = settings.static_margin(model);
    let mut q = q.clone();
    for _ in 0..settings.projection_iterations {
        let joints = model.joint_rows(&q);
        let contacts: Vec<Contact> = collision::contacts(model, &q, params.edges, reach)
            .into_iter()
            .filter(|c| (c.gap < 0.0 && active.contains(&c.id)) || holding.contains(&c.id))
            .collect();
        let m = joints.values.len() + contacts.len();
        if m == 0 {
            break;
        }
        let mut values = DVector::zeros(m);
        let mut gradients = DMatrix::zeros(model.dof(), m);
        values
            .rows_mut(0, joints.values.len())
            .copy_from(&joints.values);
        gradients
            .columns_mut(0, joints.values.len())
            .copy_from(&joints.gradients);
        for (i, c) in contacts.iter().enumerate() {
            values[joints.values.len() + i] = c.gap;
            gradients.set_column(
                joints.values.len() + i,
                &c.jacobian.dense_normal(model.dof()),
            );
        }
        if !values.iter().all(|x| x.is_finite())
            || values.amax() <= settings.projection_residual * scale
        {
            break;
        }
        let minv_j = crate::solver::linalg::apply_mass_inverse(&model.mass_inverse(), &gradients);
        let Some(s_plus) = crate::solver::linalg::pseudo_inverse(gradients.tr_mul(&minv_j)) else {
            break;
        };
        let delta = -(minv_j * (s_plus * values));
        let next = model.integrate(&q, &delta, 1.0);
        if !next.iter().all(|x| x.is_finite()) {
            break;
        }
        q = next;
    }
    q
}
