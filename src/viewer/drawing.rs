//! Draws a scene's `drawing` section ([`crate::scene::drawing`]): parts whose
//! pose is affine in the generalized coordinates, such as the woodpecker toy's
//! pole, sleeve and bird. A linear system has no bodies, so this is what the
//! viewer shows of it. Parts are flat meshes in the z = 0 plane, posed from q
//! interpolated between the last two states like the bodies. A comparison's
//! run B has its own parts ([`GhostPart`]), posed from B's coordinates, as
//! its bodies have ghosts.

use super::body_meshes::{GHOST, GHOST_ALPHA};
use super::compare::Compare;
use super::material::LabMaterial;
use super::sim::{PreviousState, SceneEpoch, Sim, SimSystems};
use super::visuals::PALETTE;
use crate::scene::drawing::{Part, Sketch};
use bevy::asset::RenderAssetUsages;
use bevy::light::NotShadowCaster;
use bevy::mesh::{Indices, PrimitiveTopology};
use bevy::prelude::*;
use nalgebra::DVector;

/// The entity drawing part `.0` of the scene's drawing.
#[derive(Component, Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartVisual(pub usize);

/// The entity drawing part `.0` of a comparison's run B, in the ghost's
/// translucent tint ([`GHOST`]), posed from B's coordinates.
#[derive(Component, Debug, Clone, Copy, PartialEq, Eq)]
pub struct GhostPart(pub usize);

/// Parent of the drawing's parts (despawned with the scene).
#[derive(Component, Debug, Clone, Copy, Default)]
pub struct DrawingRoot;

/// Spawns and poses the drawing's parts.
pub struct DrawingPlugin;

impl Plugin for DrawingPlugin {
    fn build(&self, app: &mut App) {
        app.add_systems(PreUpdate, spawn_drawing).add_systems(
            RunFixedMainLoop,
            pose_parts
                .in_set(SimSystems::Sync)
                .in_set(RunFixedMainLoopSystems::AfterFixedMainLoop),
        );
    }
}

/// Depth between stacked parts so later parts draw in front, m.
const LAYER: f32 = 1e-4;

fn spawn_drawing(
    mut commands: Commands,
    (sim, compare): (Res<Sim>, Option<Res<Compare>>),
    epoch: Res<SceneEpoch>,
    mut spawned: Local<Option<(SceneEpoch, bool)>>,
    roots: Query<Entity, With<DrawingRoot>>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<LabMaterial>>,
) {
    // Again for a new scene, and when a run B starts or stops.
    let now = (*epoch, compare.is_some());
    if *spawned == Some(now) {
        return;
    }
    *spawned = Some(now);
    for root in &roots {
        commands.entity(root).despawn();
    }
    if sim.scene.drawing.is_empty() {
        return;
    }
    let root = commands
        .spawn((
            Name::new("drawing"),
            DrawingRoot,
            Transform::default(),
            Visibility::default(),
        ))
        .id();
    // Run B's parts' material, made only when there is a run B.
    let ghost = compare.as_ref().map(|c| {
        (
            c,
            materials.add(LabMaterial::unlit(GHOST).translucent(GHOST_ALPHA)),
        )
    });
    for (i, part) in sim.scene.drawing.iter().enumerate() {
        let [r, g, b] = part
            .color
            .filter(|c| c.iter().all(|x| x.is_finite()))
            .unwrap_or(PALETTE[i % PALETTE.len()]);
        let material = materials.add(LabMaterial::unlit(Color::srgb(
            r.clamp(0.0, 1.0),
            g.clamp(0.0, 1.0),
            b.clamp(0.0, 1.0),
        )));
        let entity = commands
            .spawn((
                Name::new(part.name.clone()),
                PartVisual(i),
                part_transform(part, &sim.state.q, i),
                Visibility::default(),
                ChildOf(root),
            ))
            .id();
        let shapes: Vec<Handle<Mesh>> = part
            .shapes
            .iter()
            .filter_map(sketch_mesh)
            .map(|mesh| meshes.add(mesh))
            .collect();
        for mesh in &shapes {
            commands.spawn((
                Mesh3d(mesh.clone()),
                MeshMaterial3d(material.clone()),
                NotShadowCaster,
                Transform::default(),
                ChildOf(entity),
            ));
        }
        // Run B's part, a little in front of A's.
        if let Some((compare, ghost_material)) = &ghost {
            let ghost = commands
                .spawn((
                    Name::new(format!("B: {}", part.name)),
                    GhostPart(i),
                    ghost_transform(part, &compare.b.state.q, i),
                    Visibility::default(),
                    ChildOf(root),
                ))
                .id();
            for mesh in shapes {
                commands.spawn((
                    Mesh3d(mesh),
                    MeshMaterial3d(ghost_material.clone()),
                    NotShadowCaster,
                    Transform::default(),
                    ChildOf(ghost),
                ));
            }
        }
    }
}

/// B's part at q: A's pose, drawn in front of every part of A.
fn ghost_transform(part: &Part, q: &DVector<f64>, layer: usize) -> Transform {
    let mut transform = part_transform(part, q, layer);
    transform.translation.z += GHOST_LAYER;
    transform
}

/// How far in front of A's drawing B's parts lie, m.
const GHOST_LAYER: f32 = 0.01;

/// The part's pose at q as a transform in the z = 0 plane (layered by index).
fn part_transform(part: &Part, q: &DVector<f64>, layer: usize) -> Transform {
    let (x, y, angle) = part.pose(q);
    Transform::from_xyz(x as f32, y as f32, layer as f32 * LAYER)
        .with_rotation(Quat::from_rotation_z(angle as f32))
}

/// Poses every part from q interpolated by the fixed-time overstep fraction
/// (q enters affinely, so interpolating q interpolates the pose).
fn pose_parts(
    (sim, compare): (Res<Sim>, Option<Res<Compare>>),
    previous: Res<PreviousState>,
    fixed: Res<Time<Fixed>>,
    mut parts: Query<(&PartVisual, &mut Transform), Without<GhostPart>>,
    mut ghosts: Query<(&GhostPart, &mut Transform), Without<PartVisual>>,
) {
    let alpha = fixed.overstep_fraction_f64().clamp(0.0, 1.0);
    let between = |previous: &DVector<f64>, current: &DVector<f64>| {
        if previous.len() == current.len() && alpha < 1.0 {
            previous + (current - previous) * alpha
        } else {
            current.clone()
        }
    };
    let q = between(&previous.q, &sim.state.q);
    for (visual, mut transform) in &mut parts {
        let Some(part) = sim.scene.drawing.get(visual.0) else {
            continue;
        };
        let posed = part_transform(part, &q, visual.0);
        if posed.translation.is_finite() && posed.rotation.is_finite() {
            *transform = posed;
        }
    }
    let Some(compare) = compare else {
        return;
    };
    let q = between(&compare.previous_q, &compare.b.state.q);
    for (ghost, mut transform) in &mut ghosts {
        let Some(part) = compare.b.scene.drawing.get(ghost.0) else {
            continue;
        };
        let posed = ghost_transform(part, &q, ghost.0);
        if posed.translation.is_finite() && posed.rotation.is_finite() {
            *transform = posed;
        }
    }
}

/// A flat mesh (z = 0, facing +z) of a sketch, in the part's axes; None when
/// the sketch is degenerate.
fn sketch_mesh(sketch: &Sketch) -> Option<Mesh> {
    let finite = |p: &[f64; 2]| p.iter().all(|x| x.is_finite());
    match sketch {
        Sketch::Circle { center, radius } => {
            if !(finite(center) && radius.is_finite() && *radius > 0.0) {
                return None;
            }
            let n = 40;
            let ring: Vec<[f64; 2]> = (0..n)
                .map(|k| {
                    let a = std::f64::consts::TAU * k as f64 / n as f64;
                    [center[0] + radius * a.cos(), center[1] + radius * a.sin()]
                })
                .collect();
            Some(fan(&ring))
        }
        Sketch::Segment { from, to, width } => {
            if !(finite(from) && finite(to) && width.is_finite() && *width > 0.0) {
                return None;
            }
            let (dx, dy) = (to[0] - from[0], to[1] - from[1]);
            let length = dx.hypot(dy);
            if length == 0.0 {
                return None;
            }
            let (nx, ny) = (-dy / length * width / 2.0, dx / length * width / 2.0);
            Some(fan(&[
                [from[0] + nx, from[1] + ny],
                [from[0] - nx, from[1] - ny],
                [to[0] - nx, to[1] - ny],
                [to[0] + nx, to[1] + ny],
            ]))
        }
        Sketch::Polygon { points } => {
            if points.len() < 3 || !points.iter().all(finite) {
                return None;
            }
            Some(fan(points))
        }
    }
}

/// A triangle fan around the centroid: exact for convex and star-shaped
/// outlines, which is what drawings use.
fn fan(outline: &[[f64; 2]]) -> Mesh {
    let n = outline.len();
    let (sx, sy) = outline
        .iter()
        .fold((0.0, 0.0), |(x, y), p| (x + p[0], y + p[1]));
    let centre = [(sx / n as f64) as f32, (sy / n as f64) as f32, 0.0];
    let mut positions = vec![centre];
    positions.extend(outline.iter().map(|p| [p[0] as f32, p[1] as f32, 0.0]));
    let mut indices = Vec::with_capacity(3 * n);
    for k in 0..n as u32 {
        indices.extend([0, 1 + k, 1 + (k + 1) % n as u32]);
    }
    let normals = vec![[0.0, 0.0, 1.0]; positions.len()];
    let uvs = vec![[0.0, 0.0]; positions.len()];
    Mesh::new(
        PrimitiveTopology::TriangleList,
        RenderAssetUsages::default(),
    )
    .with_inserted_attribute(Mesh::ATTRIBUTE_POSITION, positions)
    .with_inserted_attribute(Mesh::ATTRIBUTE_NORMAL, normals)
    .with_inserted_attribute(Mesh::ATTRIBUTE_UV_0, uvs)
    .with_inserted_indices(Indices::U32(indices))
}
