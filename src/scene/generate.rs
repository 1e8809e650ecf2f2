//! Generated scenes of any size, laid out like `scenes/pile.ron`: the piles of
//! the scale benchmark.
//!
//! A pile of N bodies is three loose layers of a square grid (0.26 m pitch);
//! each layer is shifted by half a pitch from the one below and lifted by
//! 0.27 m, so bodies fall into the gaps below them. Bodies cycle through
//! spheres (r = 0.08 m, 0.5 kg), tilted boxes (0.16 × 0.12 × 0.10 m, 0.6 kg)
//! and tilted capsules (0.12 m core, r = 0.045 m, 0.4 kg), each box or
//! capsule tilted by a different angle about one fixed axis
//! ([`pile_source`]; [`pile_source_of`] takes another cycle of shapes). The
//! grid widens with N, so the pile keeps its height and every body its
//! neighbourhood: the cost per body should not grow with N. The grid piles
//! ([`grid_pile`]) are spheres and boxes in turn at a 0.22 m pitch, the
//! layout of `benches/scenes/grid_pile_200.ron`: closer, so the boxes
//! settle face to face on each other.

use super::{Scene, SceneError, parse};
use crate::mix::{GAMMA, splitmix64};
use nalgebra::{Unit, UnitQuaternion, Vector3};
use std::fmt::Write as _;
use std::path::Path;

/// Layers of the generated piles.
const LAYERS: usize = 3;
/// Grid pitch, m.
const PITCH: f64 = 0.26;
/// Grid pitch of [`grid_pile`], m.
pub const GRID_PITCH: f64 = 0.22;
/// How far a body of [`grid_pile`] may lie off its grid point, m: across,
/// and up (as in `grid_pile_200.ron`).
pub const GRID_JITTER: f64 = 0.01;
/// Height between layers, m.
const RISE: f64 = 0.27;

/// A shape of the generated piles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PileShape {
    /// A sphere, r = 0.08 m, 0.5 kg.
    Sphere,
    /// A box, half extents (0.08, 0.06, 0.05) m, 0.6 kg, tilted.
    Box,
    /// A capsule, half length 0.06 m, r = 0.045 m, 0.4 kg, tilted.
    Capsule,
}

/// The cycle of shapes of [`pile_source`].
pub const PILE_SHAPES: [PileShape; 3] = [PileShape::Sphere, PileShape::Box, PileShape::Capsule];

/// The RON text of a pile of `n` bodies (at least one): spheres, boxes and
/// capsules in turn.
pub fn pile_source(n: usize) -> String {
    pile_source_of(n, &PILE_SHAPES)
}

/// The RON text of a pile of `n` bodies (at least one) whose shapes cycle
/// through `shapes` (spheres if empty). Bodies are named after their shape
/// and its count (`sphere1`, `box1`, `capsule1`, …).
pub fn pile_source_of(n: usize, shapes: &[PileShape]) -> String {
    pile_source_at(n, shapes, PITCH, 0.0)
}

/// [`pile_source_of`] on a grid of `pitch` (m), each body moved off its
/// grid point by up to `jitter` (m) across and lifted by up to `jitter`,
/// by a fixed sequence (`offsets`).
pub fn pile_source_at(n: usize, shapes: &[PileShape], pitch: f64, jitter: f64) -> String {
    let n = n.max(1);
    let shapes = if shapes.is_empty() {
        &[PileShape::Sphere][..]
    } else {
        shapes
    };
    let per_layer = n.div_ceil(LAYERS);
    let columns = (per_layer as f64).sqrt().ceil() as usize;
    let rows = per_layer.div_ceil(columns);
    let width = columns.max(rows) as f64 * pitch;
    let mut bodies = String::new();
    for i in 0..n {
        let layer = i / per_layer;
        let cell = i % per_layer;
        let (column, row) = (cell % columns, cell / columns);
        let shift = if layer % 2 == 1 { 0.5 * pitch } else { 0.0 };
        let [dx, dy, dz] = offsets(i).map(|u| u * jitter);
        let x = (column as f64 - 0.5 * (columns as f64 - 1.0)) * pitch + shift + dx;
        let y = (row as f64 - 0.5 * (rows as f64 - 1.0)) * pitch + shift + dy;
        // Small height differences so that bodies do not all land at once.
        let z = 0.10 + RISE * layer as f64 + 0.01 * ((i * 7) % 3) as f64 + 0.5 * (dz + jitter);
        let shape = shapes[i % shapes.len()];
        // The count of this shape so far, and a tilt that differs from body
        // to body (with two shapes in the cycle, the boxes' tilts of the
        // first piles: 0.25, 0.5, …).
        let in_cycle = |part: &[PileShape]| part.iter().filter(|&&s| s == shape).count();
        let count = (i / shapes.len()) * in_cycle(shapes) + in_cycle(&shapes[..=i % shapes.len()]);
        let angle = 0.25 * (i / 2 + 1) as f64;
        let _ = match shape {
            PileShape::Sphere => writeln!(
                bodies,
                "            (name: \"sphere{count}\", shape: Sphere(radius: 0.08), mass: 0.5, position: ({x:.3}, {y:.3}, {z:.3})),",
            ),
            PileShape::Box => writeln!(
                bodies,
                "            (name: \"box{count}\", shape: Box(half_extents: (0.08, 0.06, 0.05)), mass: 0.6, position: ({x:.3}, {y:.3}, {:.3}), orientation: AxisAngle((0.3, 1.0, 0.2), {angle:.2})),",
                (z + 0.01).max(clear_of_table(shape, angle))
            ),
            PileShape::Capsule => writeln!(
                bodies,
                "            (name: \"capsule{count}\", shape: Capsule(half_length: 0.06, radius: 0.045), mass: 0.4, position: ({x:.3}, {y:.3}, {:.3}), orientation: AxisAngle((0.3, 1.0, 0.2), {angle:.2})),",
                (z + 0.01).max(clear_of_table(shape, angle))
            ),
        };
    }
    let extent = (width + 1.0).max(2.0);
    let distance = (2.0 * width).max(2.0);
    let names: Vec<&str> = shapes
        .iter()
        .map(|s| match s {
            PileShape::Sphere => "spheres",
            PileShape::Box => "boxes",
            PileShape::Capsule => "capsules",
        })
        .collect();
    let kinds = match names.len() {
        1 => names[0].to_owned(),
        k => format!("{} and {}", names[..k - 1].join(", "), names[k - 1]),
    };
    format!(
        "// A pile of {n} bodies, generated by `contactlab::scene::generate` ({pitch} m pitch):
// {kinds} in {LAYERS} loose layers dropped onto a table.
Scene(
    name: \"Pile of {n}\",
    description: \"{n} {kinds} in {LAYERS} loose layers drop onto a table and settle into a pile: many simultaneous contacts, large LCPs.\",
    params: (
        dt: 0.005,
        duration: 1.0,
        mu: 0.5,
        edges: 8,
    ),
    camera: (target: (0.0, 0.0, 0.2), distance: {distance:.1}),
    system: Rigid((
        dimension: Spatial,
        gravity: (0.0, 0.0, -9.81),
        bodies: [
{bodies}        ],
        surfaces: [
            (name: \"table\", normal: (0.0, 0.0, 1.0), extent: {extent:.1}),
        ],
    )),
)
"
    )
}

/// Three numbers in [−1, 1) for body i: splitmix64's outputs from its
/// states i, i + γ and i + 2γ, the same on every machine.
fn offsets(i: usize) -> [f64; 3] {
    std::array::from_fn(|k| {
        let state = (i as u64).wrapping_add((k as u64).wrapping_mul(GAMMA));
        (splitmix64(state) >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    })
}

/// The lowest centre height, m, at which a box or capsule of the piles
/// tilted by `angle` (rounded as printed) about their axis keeps its lowest
/// point at least 1 mm above the table: some tilts of the bottom layer
/// would otherwise start inside it, which loading refuses.
fn clear_of_table(shape: PileShape, angle: f64) -> f64 {
    let angle: f64 = format!("{angle:.2}").parse().unwrap_or(angle);
    let axis = Unit::new_normalize(Vector3::new(0.3, 1.0, 0.2));
    let rotation = UnitQuaternion::from_axis_angle(&axis, angle);
    let lowest = match shape {
        PileShape::Sphere => -0.08,
        PileShape::Box => {
            let half = Vector3::new(0.08, 0.06, 0.05);
            (0..8)
                .map(|corner| {
                    let sign = |bit: usize| if corner & bit == 0 { -1.0 } else { 1.0 };
                    let local = Vector3::new(sign(1) * half.x, sign(2) * half.y, sign(4) * half.z);
                    (rotation * local).z
                })
                .fold(f64::INFINITY, f64::min)
        }
        // The core segment along the body x axis, then the radius.
        PileShape::Capsule => -(rotation * Vector3::new(0.06, 0.0, 0.0)).z.abs() - 0.045,
    };
    ((0.001 - lowest) * 1000.0).ceil() / 1000.0
}

/// A pile of `n` bodies, loaded as if from a file named `pile_<n>.ron`.
pub fn pile(n: usize) -> Result<Scene, SceneError> {
    pile_of(n, &PILE_SHAPES)
}

/// [`pile`] with the shapes cycling through `shapes` ([`pile_source_of`]).
pub fn pile_of(n: usize, shapes: &[PileShape]) -> Result<Scene, SceneError> {
    let name = format!("pile_{n}.ron");
    parse(&pile_source_of(n, shapes), Path::new(&name))
}

/// A grid pile of `n` bodies: spheres and boxes in turn in three staggered
/// square layers at [`GRID_PITCH`], each body up to [`GRID_JITTER`] off its
/// grid point, loaded as if from `grid_pile_<n>.ron`.
pub fn grid_pile(n: usize) -> Result<Scene, SceneError> {
    let name = format!("grid_pile_{n}.ron");
    let shapes = [PileShape::Sphere, PileShape::Box];
    let source = pile_source_at(n, &shapes, GRID_PITCH, GRID_JITTER);
    parse(&source, Path::new(&name))
}
