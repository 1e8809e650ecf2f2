//! A generalized linear system from its scene section: coordinates named
//! as CSV columns, M symmetric positive definite with an inverse within the
//! magnitude rule, K, C, forces, harmonics and affine contacts.

use super::magnitude::{MAX_MAGNITUDE, MIN_MASS_OR_SIZE};
use super::spec::LinearSpec;
use super::{Checker, SUMMARY_COLUMNS, SceneError, csv_column_name, impact_coefficients};
use crate::model::{AffineContact, Harmonic, LinearSystem, Model, State};
use nalgebra::{DMatrix, DVector};
use std::collections::HashSet;

pub(super) fn build_linear(
    spec: &LinearSpec,
    check: &Checker<'_>,
) -> Result<(Model, State), SceneError> {
    let n = spec.coordinates.len();
    if n == 0 {
        return Err(check.error(
            &["coordinates"],
            "coordinates",
            "a linear system needs at least one coordinate",
        ));
    }
    // Each coordinate heads two CSV columns, `C` and `C.dot`; neither may
    // repeat a column of the CSV already taken.
    let mut columns: HashSet<String> = ["t"]
        .iter()
        .chain(&SUMMARY_COLUMNS)
        .map(|c| (*c).to_owned())
        .collect();
    for (i, c) in spec.coordinates.iter().enumerate() {
        let written = format!("{c:?}");
        csv_column_name(
            c,
            check,
            &["coordinates", &written],
            &format!("coordinates[{i}]"),
        )?;
        if spec.coordinates[..i].contains(c) {
            return Err(check.error(
                &["coordinates"],
                format!("coordinates[{i}]"),
                format!("duplicate name `{c}`"),
            ));
        }
        for column in [c.clone(), format!("{c}.dot")] {
            if !columns.insert(column.clone()) {
                return Err(check.error(
                    &["coordinates", &written],
                    format!("coordinates[{i}]"),
                    format!(
                        "`{c}` would head the CSV column `{column}`, which the CSV already has; use another name"
                    ),
                ));
            }
        }
    }
    let matrix =
        |rows: &Option<Vec<Vec<f64>>>, field: &'static str| -> Result<DMatrix<f64>, SceneError> {
            match rows {
                None => Ok(DMatrix::zeros(n, n)),
                Some(rows) => {
                    if rows.len() != n || rows.iter().any(|r| r.len() != n) {
                        return Err(check.error(
                            &[field],
                            field,
                            format!("must be {n}×{n} (one row per coordinate)"),
                        ));
                    }
                    if rows.iter().flatten().any(|x| !x.is_finite()) {
                        return Err(check.error(&[field], field, "entries must be finite"));
                    }
                    Ok(DMatrix::from_fn(n, n, |i, j| rows[i][j]))
                }
            }
        };
    let vector = |values: &Option<Vec<f64>>,
                  anchors: &[&str],
                  field: String|
     -> Result<DVector<f64>, SceneError> {
        match values {
            None => Ok(DVector::zeros(n)),
            Some(v) if v.len() == n && v.iter().all(|x| x.is_finite()) => {
                Ok(DVector::from_column_slice(v))
            }
            Some(_) => Err(check.error(
                anchors,
                field,
                format!("must have {n} finite entries (one per coordinate)"),
            )),
        }
    };
    let mass = matrix(&Some(spec.mass.clone()), "mass")?;
    symmetric(&mass, check, "mass")?;
    let stiffness = matrix(&spec.stiffness, "stiffness")?;
    let damping = matrix(&spec.damping, "damping")?;
    let force = vector(&spec.force, &["force"], "force".into())?;
    let q = vector(
        &Some(spec.initial_position.clone()),
        &["initial_position"],
        "initial_position".into(),
    )?;
    let v = vector(
        &Some(spec.initial_velocity.clone()),
        &["initial_velocity"],
        "initial_velocity".into(),
    )?;
    let mut harmonics = Vec::new();
    for (i, h) in spec.harmonics.iter().enumerate() {
        let amplitude = vector(
            &Some(h.amplitude.clone()),
            &["harmonics", "amplitude"],
            format!("harmonics[{i}].amplitude"),
        )?;
        if !(h.omega.is_finite() && h.phase.is_finite()) {
            return Err(check.error(
                &["harmonics", "omega"],
                format!("harmonics[{i}].omega"),
                "must be finite",
            ));
        }
        harmonics.push(Harmonic {
            amplitude,
            omega: h.omega,
            phase: h.phase,
        });
    }
    let mut contacts = Vec::new();
    let mut impact = Vec::new();
    for (i, c) in spec.contacts.iter().enumerate() {
        let quoted = format!("\"{}\"", c.name);
        let w_n = vector(
            &Some(c.w_n.clone()),
            &["contacts", quoted.as_str(), "w_n"],
            format!("contacts[{i}].w_n"),
        )?;
        let w_t = vector(
            &Some(c.w_t.clone()),
            &["contacts", quoted.as_str(), "w_t"],
            format!("contacts[{i}].w_t"),
        )?;
        if !c.g0.is_finite() || w_n.norm() == 0.0 {
            return Err(check.error(
                &["contacts", quoted.as_str(), "w_n"],
                format!("contacts[{i}].w_n"),
                "g0 must be finite and w_n non-zero",
            ));
        }
        impact.push(impact_coefficients(
            c.restitution,
            c.tangential_restitution,
            check,
            &["contacts", quoted.as_str()],
            &format!("contacts[{i}]"),
        )?);
        contacts.push(AffineContact {
            name: c.name.clone(),
            g0: c.g0,
            w_n,
            w_t,
        });
    }
    let mut system = LinearSystem::new(
        spec.coordinates.clone(),
        mass,
        stiffness,
        damping,
        force,
        harmonics,
        contacts,
    )
    .ok_or_else(|| {
        check.error(
            &["mass"],
            "mass",
            "must be symmetric positive definite: its Cholesky factorization fails (a zero or negative mass, or rows that depend on each other)",
        )
    })?;
    // A nearly singular M passes Cholesky but its inverse, which the steps
    // multiply by, breaks the magnitude rule (its masses below 1e-12 kg).
    let inverse = system.mass_inverse().amax();
    if !(inverse.is_finite() && inverse <= MAX_MAGNITUDE) {
        return Err(check.error(
            &["mass"],
            "mass",
            format!(
                "is nearly singular: M⁻¹ has entries up to {inverse:.3e}, more than {MAX_MAGNITUDE:e} (masses below {MIN_MASS_OR_SIZE:e} kg)"
            ),
        ));
    }
    system.impact = impact;
    Ok((Model::Linear(system), State { q, v, t: 0.0 }))
}

/// A linear system's matrix that must be symmetric: Mᵢⱼ = Mⱼᵢ up to rounding
/// (1e-12 of its largest entry); nalgebra's Cholesky reads only the lower
/// triangle and would accept any upper one.
fn symmetric(m: &DMatrix<f64>, check: &Checker<'_>, field: &str) -> Result<(), SceneError> {
    let tolerance = 1e-12 * m.amax();
    for i in 0..m.nrows() {
        for j in (i + 1)..m.ncols() {
            if (m[(i, j)] - m[(j, i)]).abs() > tolerance {
                return Err(check.error(
                    &[field],
                    format!("{field}[{i}][{j}]"),
                    format!(
                        "must be symmetric positive definite, but {field}[{i}][{j}] = {} and {field}[{j}][{i}] = {}",
                        m[(i, j)],
                        m[(j, i)]
                    ),
                ));
            }
        }
    }
    Ok(())
}
