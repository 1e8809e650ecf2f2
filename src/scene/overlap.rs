//! Initial interpenetration: a scene must not start with a body inside a
//! surface or inside another body (or, in a linear system, with a contact
//! already closed past its gap), deeper than a tolerance. A stepper would
//! push the overlap out within one step with an impulse of about depth/h:
//! a rod started 100 m under the table left it with 8e8 J.
//!
//! A scene that means it sets `allow_initial_overlap: true`.

use crate::model::{Contact, Model, Other, State};

/// The deepest initial penetration accepted without `allow_initial_overlap`,
/// m: 1e-6 of the model's length scale ([`Model::length_scale`]), which
/// bodies placed exactly in contact (up to rounding) stay within, and never
/// more than [`MAX_TOLERANCE`].
pub fn tolerance(model: &Model) -> f64 {
    (1e-6 * model.length_scale()).min(MAX_TOLERANCE)
}

/// The largest overlap tolerance, m: the depth Stewart–Trinkle promises no
/// step ends below. Rounding of positions stays far within it at any length
/// scale the magnitude rule allows (1e-16 of 1e6 m is 1e-10 m), and a body a
/// million metres long, started a metre deep, would be shot out by the
/// first step.
pub const MAX_TOLERANCE: f64 = 1e-6;

/// The deepest overlap of a state.
#[derive(Debug, Clone, PartialEq)]
pub struct Overlap {
    /// The first body (in a linear system, the contact's index).
    pub a: usize,
    /// The other side.
    pub b: Other,
    /// How deep, m (positive).
    pub depth: f64,
    /// How deep it could have been and be accepted, m.
    pub limit: f64,
}

/// The deepest overlap at `state` beyond [`tolerance`], if any.
pub fn deepest(model: &Model, state: &State, edges: usize) -> Option<Overlap> {
    let limit = tolerance(model);
    deepest_beyond(model, state, edges, |_| limit)
}

/// The deepest overlap at `state` beyond what `accepted` accepts for its
/// contact (m, and never less than [`tolerance`]), if any.
pub fn deepest_beyond(
    model: &Model,
    state: &State,
    edges: usize,
    accepted: impl Fn(&Contact) -> f64,
) -> Option<Overlap> {
    let least = tolerance(model);
    crate::collision::contacts(model, &state.q, edges, 0.0)
        .into_iter()
        .map(|c| {
            let limit = accepted(&c).max(least);
            (c, limit)
        })
        .filter(|(c, limit)| c.gap < -limit)
        .min_by(|(x, _), (y, _)| x.gap.total_cmp(&y.gap))
        .map(|(c, limit)| Overlap {
            a: c.id.a,
            b: c.id.b,
            depth: -c.gap,
            limit,
        })
}

/// What to say about an overlap: (the name of the body or coordinate field
/// to point at, that field, the message).
pub fn describe(model: &Model, overlap: &Overlap) -> (String, String, String) {
    let depth = rounded(overlap.depth);
    let limit = rounded(overlap.limit);
    let remedy = format!(
        "(more than the {limit} m tolerance); move them apart, or set `allow_initial_overlap: true` if the scene means it"
    );
    match model {
        Model::Rigid(s) => {
            let name = |i: usize| s.bodies.get(i).map_or("?", |b| b.name.as_str());
            match overlap.b {
                Other::Surface(_) => {
                    let surface = s.other_name(overlap.b).unwrap_or("?");
                    (
                        name(overlap.a).to_owned(),
                        format!("bodies[{}].position", overlap.a),
                        format!(
                            "body `{}` starts {depth} m inside surface `{surface}` {remedy}",
                            name(overlap.a)
                        ),
                    )
                }
                Other::Body(j) => (
                    name(j).to_owned(),
                    format!("bodies[{j}].position"),
                    format!(
                        "bodies `{}` and `{}` start {depth} m inside each other {remedy}",
                        name(overlap.a),
                        name(j)
                    ),
                ),
                Other::World => (
                    name(overlap.a).to_owned(),
                    format!("bodies[{}].position", overlap.a),
                    format!(
                        "body `{}` starts {depth} m inside {remedy}",
                        name(overlap.a)
                    ),
                ),
            }
        }
        Model::Linear(s) => {
            let contact = s.contacts.get(overlap.a).map_or("?", |c| c.name.as_str());
            (
                String::new(),
                "initial_position".to_owned(),
                format!(
                    "contact `{contact}` starts closed by {depth} (its gap g0 + w_nᵀq is −{depth}) {remedy}"
                ),
            )
        }
    }
}

/// `x` to six significant digits, plainly from 1e-4 up to 1e7 (0.05,
/// 100.05), with an exponent outside (5.5e-7, 1e-300, 6e301).
pub(crate) fn rounded(x: f64) -> String {
    let x: f64 = format!("{x:.5e}").parse().unwrap_or(x);
    if x != 0.0 && !(1e-4..1e7).contains(&x.abs()) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}
