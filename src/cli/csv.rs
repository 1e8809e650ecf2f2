//! The CSV columns of `contactlab run`: `t`; per planar body B
//! `B.x,B.y,B.theta,B.vx,B.vy,B.omega`; per spatial body
//! `B.x,B.y,B.z,B.qw,B.qx,B.qy,B.qz,B.vx,B.vy,B.vz,B.wx,B.wy,B.wz` (ω in world
//! axes); per coordinate C of a linear system `C,C.dot`; then
//! `kinetic_energy,potential_energy,active_contacts,lcp_size,lcp_pivots,min_gap,residual,nsgs_sweeps`
//! ([`summary_row`]; `residual`: the contact solve's own residual, relative,
//! NSGS's ρ; `nsgs_sweeps`: 0 with Lemke).

use crate::model::rigid::{position_size, velocity_size};
use crate::model::{Dimension, Model, State};
use crate::params::Params;
use crate::scene::SUMMARY_COLUMNS;
use crate::stepper::StepReport;

/// The header row.
pub fn csv_header(model: &Model) -> String {
    let mut cols = vec!["t".to_owned()];
    match model {
        Model::Rigid(s) => {
            let fields: &[&str] = match s.dimension {
                Dimension::Planar => &["x", "y", "theta", "vx", "vy", "omega"],
                Dimension::Spatial => &[
                    "x", "y", "z", "qw", "qx", "qy", "qz", "vx", "vy", "vz", "wx", "wy", "wz",
                ],
            };
            for b in &s.bodies {
                cols.extend(fields.iter().map(|f| format!("{}.{f}", b.name)));
            }
        }
        Model::Linear(s) => {
            for c in &s.coordinates {
                cols.push(c.clone());
                cols.push(format!("{c}.dot"));
            }
        }
    }
    cols.extend(SUMMARY_COLUMNS.map(String::from));
    cols.join(",")
}

/// One data row for `state`; `report` is the step that produced it (None at t = 0,
/// where the LCP columns are 0 and min_gap is measured directly).
pub fn csv_row(
    model: &Model,
    params: &Params,
    state: &State,
    report: Option<&StepReport>,
) -> String {
    let mut values: Vec<f64> = vec![state.t];
    match model {
        Model::Rigid(s) => {
            let (pq, pv) = (position_size(s.dimension), velocity_size(s.dimension));
            for i in 0..s.bodies.len() {
                let (oq, ov) = (i * pq, i * pv);
                match s.dimension {
                    Dimension::Planar => {
                        values.extend(state.q.rows(oq, 3).iter());
                        values.extend(state.v.rows(ov, 3).iter());
                    }
                    Dimension::Spatial => {
                        values.extend(state.q.rows(oq, 7).iter());
                        values.extend(state.v.rows(ov, 3).iter());
                        values.extend(s.angular_velocity(&state.q, &state.v, i).iter());
                    }
                }
            }
        }
        Model::Linear(s) => {
            for i in 0..s.dof() {
                values.push(state.q[i]);
                values.push(state.v[i]);
            }
        }
    }
    let mut out: Vec<String> = values.iter().map(|v| format!("{v}")).collect();
    out.extend(summary_row(model, params, state, report));
    out.join(",")
}

/// The values of the summary columns ([`SUMMARY_COLUMNS`]) for `state`;
/// `report` is the step that produced it (None at t = 0, where the LCP
/// columns are 0 and min_gap is measured directly).
pub fn summary_row(
    model: &Model,
    params: &Params,
    state: &State,
    report: Option<&StepReport>,
) -> Vec<String> {
    let (kinetic, potential) = model.energy(&state.q, &state.v, params);
    let (active, size, pivots, min_gap, residual, sweeps) = match report {
        Some(r) => (
            r.active_contacts(),
            r.lcp_size,
            r.pivots,
            r.min_gap,
            r.residual,
            r.sweeps,
        ),
        None => (0, 0, 0, initial_gap(model, params, state), 0.0, 0),
    };
    vec![
        format!("{kinetic}"),
        format!("{potential}"),
        active.to_string(),
        size.to_string(),
        pivots.to_string(),
        format!("{min_gap}"),
        format!("{residual}"),
        sweeps.to_string(),
    ]
}

/// The smallest gap among the contacts near `state`, m (∞ when none is
/// within the contact margin).
pub fn initial_gap(model: &Model, params: &Params, state: &State) -> f64 {
    let near = crate::collision::contacts(model, &state.q, params.edges, model.length_scale());
    near.iter().map(|c| c.gap).fold(f64::INFINITY, f64::min)
}
