//! The bodies' meshes and materials: a mesh matching each body's shape (thin
//! extrusions in the z = 0 plane for planar scenes), with a darker spin marker
//! on balls and disks so that rolling shows.
//!
//! Bodies of the same shape and size share one mesh, every ball the unit one
//! scaled by its radius, and bodies of the same colour share one material
//! ([`BodyAssets`]), so that Bevy batches a granular scene's thousand grains
//! into a few draws. Nothing changes a body's material afterwards (the
//! selection is an outline gizmo), so sharing recolours nothing. Balls in a
//! crowd get coarser meshes ([`Detail`]). Containers (fixed boxes holding a
//! crowd: the silo's bin, the hourglass, the avalanche's rails) are drawn
//! translucent, casting no shadow, so that the grains inside them show
//! ([`is_container`]).
//!
//! A comparison's run B is drawn as a ghost: each moving body of B in one
//! translucent tint ([`GHOST`]), a little larger than A's so that it shows
//! where the runs agree.

use super::compare::{Compare, GhostBody};
use super::material::LabMaterial;
use super::sim::{BodyVisual, SceneEpoch, Sim, rigid};
use super::visuals::{body_color, planar_depth};
use crate::geometry::Shape;
use crate::model::Dimension;
use bevy::light::NotShadowCaster;
use bevy::prelude::*;
use std::collections::HashMap;

/// Gives new body entities their meshes and materials.
pub struct BodyMeshesPlugin;

impl Plugin for BodyMeshesPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<BodyAssets>()
            .add_systems(Update, (attach_body_meshes, attach_ghost_meshes).chain());
    }
}

fn darker(color: Color, factor: f32) -> Color {
    let c = color.to_srgba();
    Color::srgb(c.red * factor, c.green * factor, c.blue * factor)
}

/// Above this many moving balls (disks) in a scene, they get
/// [`Detail::Coarse`] meshes (fixed ones, a few large obstacles, stay fine).
pub const CROWD: usize = 200;

/// How finely round bodies are tessellated. A software renderer spends its
/// time on triangles when a granular scene has thousands of small balls, each
/// a few pixels across; a coarse ball has a quarter of a fine one's
/// triangles, and its spin rings half.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Detail {
    /// A few bodies, seen up close.
    Fine,
    /// One of a crowd (more than [`CROWD`] moving balls).
    Coarse,
}

impl Detail {
    /// The detail of a body: coarse when it moves among more than [`CROWD`]
    /// moving balls (disks).
    pub fn of(moving_balls: usize, fixed: bool) -> Self {
        if moving_balls > CROWD && !fixed {
            Self::Coarse
        } else {
            Self::Fine
        }
    }

    /// Segments around a disk's rim or a ball's equator.
    fn around(self) -> u32 {
        match self {
            Self::Fine => 32,
            Self::Coarse => 16,
        }
    }
}

/// From this many moving bodies on, a scene's fixed boxes are drawn as
/// containers: translucent, so that what they hold shows.
pub const CONTAINED: usize = 50;

/// Opacity of a container's walls.
const CONTAINER_ALPHA: f32 = 0.28;

/// Whether a body is drawn as a container wall: a fixed box in a scene of
/// at least [`CONTAINED`] moving bodies.
pub fn is_container(shape: &Shape, fixed: bool, moving_bodies: usize) -> bool {
    fixed && matches!(shape, Shape::Box { .. }) && moving_bodies >= CONTAINED
}

fn body_mesh(shape: &Shape, dimension: Dimension, depth: f32, detail: Detail) -> Mesh {
    match (*shape, dimension) {
        (Shape::Sphere { radius }, Dimension::Planar) => Extrusion {
            base_shape: Circle::new(radius as f32),
            half_depth: depth / 2.0,
        }
        .mesh()
        .resolution(2 * detail.around())
        .build(),
        (Shape::Sphere { radius }, Dimension::Spatial) => Sphere::new(radius as f32)
            .mesh()
            .uv(detail.around(), detail.around() / 2),
        (
            Shape::Capsule {
                half_length,
                radius,
            },
            Dimension::Planar,
        ) => Mesh::from(Extrusion {
            base_shape: Capsule2d {
                radius: radius as f32,
                half_length: half_length as f32,
            },
            half_depth: depth / 2.0,
        })
        // Capsule2d lies along Y; the body's capsule along its x axis.
        .rotated_by(Quat::from_rotation_z(std::f32::consts::FRAC_PI_2)),
        (
            Shape::Capsule {
                half_length,
                radius,
            },
            Dimension::Spatial,
        ) => Mesh::from(Capsule3d {
            radius: radius as f32,
            half_length: half_length as f32,
        })
        // Capsule3d lies along Y; the body's capsule along its x axis.
        .rotated_by(Quat::from_rotation_z(std::f32::consts::FRAC_PI_2)),
        (Shape::Box { half_extents: h }, Dimension::Planar) => {
            Mesh::from(Cuboid::new(2.0 * h[0] as f32, 2.0 * h[1] as f32, depth))
        }
        (Shape::Box { half_extents: h }, Dimension::Spatial) => Mesh::from(Cuboid::new(
            2.0 * h[0] as f32,
            2.0 * h[1] as f32,
            2.0 * h[2] as f32,
        )),
    }
}

/// A length as the meshes see it: f32 bits, so that equal sizes hash equal.
fn quantized(length: f64) -> u32 {
    (length as f32).to_bits()
}

/// What a mesh of the viewer depends on: its kind, its dimensions (f32 bits,
/// the precision the mesh is built in) and, for planar bodies, the depth.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum MeshKey {
    /// A body of this shape.
    Body {
        kind: u8,
        dimensions: [u32; 3],
        planar: bool,
        depth: u32,
        detail: Detail,
    },
    /// The spin bar of a unit disk (planar).
    SpinBar { depth: u32 },
    /// The great-circle ring of a unit ball (spatial).
    SpinRing { detail: Detail },
}

impl MeshKey {
    fn body(shape: &Shape, dimension: Dimension, depth: f32, detail: Detail) -> Self {
        let (kind, dimensions) = match *shape {
            Shape::Sphere { radius } => (0, [quantized(radius), 0, 0]),
            Shape::Capsule {
                half_length,
                radius,
            } => (1, [quantized(half_length), quantized(radius), 0]),
            Shape::Box { half_extents: h } => {
                (2, [quantized(h[0]), quantized(h[1]), quantized(h[2])])
            }
        };
        let planar = dimension == Dimension::Planar;
        Self::Body {
            kind,
            dimensions,
            planar,
            // The depth only shapes planar meshes.
            depth: if planar { depth.to_bits() } else { 0 },
            detail,
        }
    }
}

/// The shape whose mesh a body shares, and the scale that makes it the
/// body's: every ball (disk) shares the unit one, scaled by its radius in
/// the plane of the drawing (grains' radii all differ); boxes and capsules
/// share a mesh with the bodies of their exact size.
fn shared_shape(shape: &Shape, dimension: Dimension) -> (Shape, Vec3) {
    match (*shape, dimension) {
        (Shape::Sphere { radius }, Dimension::Planar) => {
            let r = radius as f32;
            (Shape::Sphere { radius: 1.0 }, Vec3::new(r, r, 1.0))
        }
        (Shape::Sphere { radius }, Dimension::Spatial) => {
            (Shape::Sphere { radius: 1.0 }, Vec3::splat(radius as f32))
        }
        (shape, _) => (shape, Vec3::ONE),
    }
}

/// How a body's surface is drawn besides its colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Finish {
    /// An opaque body.
    Body,
    /// A round body's spin marker (darker, a different highlight).
    Marker,
    /// A container's wall, seen through ([`is_container`]).
    Container,
    /// A body of a comparison's run B ([`GHOST`]).
    Ghost,
}

/// The tint of run B's bodies (sRGB), apart from every body colour.
pub const GHOST: Color = Color::srgb(0.95, 0.3, 0.95);

/// Opacity of run B's bodies.
pub const GHOST_ALPHA: f32 = 0.45;

/// How much larger a ghost is drawn than its body, so that it is not hidden
/// inside A's body where the runs agree.
const GHOST_SCALE: f32 = 1.03;

/// A material of the viewer's bodies: its colour (sRGB, f32 bits) and finish.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct MaterialKey {
    rgba: [u32; 4],
    finish: Finish,
}

impl MaterialKey {
    fn new(color: Color, finish: Finish) -> Self {
        Self {
            rgba: color.to_srgba().to_f32_array().map(f32::to_bits),
            finish,
        }
    }
}

/// The meshes and materials shared by the bodies: one per shape and size,
/// one per colour. Emptied when a scene is (re)loaded, so that a long
/// session keeps only what the current scene uses.
#[derive(Resource, Debug, Default)]
pub struct BodyAssets {
    meshes: HashMap<MeshKey, Handle<Mesh>>,
    materials: HashMap<MaterialKey, Handle<LabMaterial>>,
    epoch: Option<SceneEpoch>,
}

impl BodyAssets {
    /// Distinct meshes held (bodies and markers).
    pub fn mesh_count(&self) -> usize {
        self.meshes.len()
    }

    /// Distinct materials held (bodies and markers).
    pub fn material_count(&self) -> usize {
        self.materials.len()
    }

    fn mesh(
        &mut self,
        key: MeshKey,
        meshes: &mut Assets<Mesh>,
        build: impl FnOnce() -> Mesh,
    ) -> Handle<Mesh> {
        self.meshes
            .entry(key)
            .or_insert_with(|| meshes.add(build()))
            .clone()
    }

    fn material(
        &mut self,
        color: Color,
        finish: Finish,
        materials: &mut Assets<LabMaterial>,
    ) -> Handle<LabMaterial> {
        self.materials
            .entry(MaterialKey::new(color, finish))
            .or_insert_with(|| {
                materials.add(match finish {
                    Finish::Body => LabMaterial::lit(color, 0.35, 40.0),
                    Finish::Marker => LabMaterial::lit(darker(color, 0.45), 0.2, 24.0),
                    Finish::Container => {
                        LabMaterial::lit(color, 0.2, 40.0).translucent(CONTAINER_ALPHA)
                    }
                    Finish::Ghost => LabMaterial::lit(color, 0.2, 40.0).translucent(GHOST_ALPHA),
                })
            })
            .clone()
    }
}

/// Gives new body entities their mesh and material (shared through
/// [`BodyAssets`]), and round bodies a darker marker so that rolling shows.
fn attach_body_meshes(
    mut commands: Commands,
    sim: Res<Sim>,
    epoch: Res<SceneEpoch>,
    mut added: Query<(Entity, &BodyVisual, &mut Transform), Added<BodyVisual>>,
    mut cache: ResMut<BodyAssets>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<LabMaterial>>,
) {
    if cache.epoch != Some(*epoch) {
        // A new scene: its sizes, depth and colours may all differ.
        *cache = BodyAssets {
            epoch: Some(*epoch),
            ..default()
        };
    }
    let Some(system) = rigid(&sim) else {
        return;
    };
    let depth = planar_depth(&sim);
    let moving_balls = (0..system.bodies.len())
        .filter(|&i| matches!(system.bodies[i].shape, Shape::Sphere { .. }) && !system.is_fixed(i))
        .count();
    let moving_bodies = (0..system.bodies.len())
        .filter(|&i| !system.is_fixed(i))
        .count();
    for (entity, body, mut transform) in &mut added {
        let Some(spec) = system.bodies.get(body.0) else {
            continue;
        };
        let detail = Detail::of(moving_balls, system.is_fixed(body.0));
        let color = body_color(&sim, body.0);
        let container = is_container(&spec.shape, system.is_fixed(body.0), moving_bodies);
        let finish = if container {
            Finish::Container
        } else {
            Finish::Body
        };
        let material = cache.material(color, finish, &mut materials);
        let (shape, scale) = shared_shape(&spec.shape, system.dimension);
        let mesh = cache.mesh(
            MeshKey::body(&shape, system.dimension, depth, detail),
            &mut meshes,
            || body_mesh(&shape, system.dimension, depth, detail),
        );
        // The simulation sets translation and rotation only; the scale stays.
        transform.scale = scale;
        commands
            .entity(entity)
            .insert((Mesh3d(mesh), MeshMaterial3d(material)));
        if container {
            // Its shadow would darken the grains it lets be seen.
            commands.entity(entity).insert(NotShadowCaster);
        }
        if let Shape::Sphere { .. } = shape {
            // Built for the unit ball; the body's scale sizes them.
            let r = 1.0;
            let marker = cache.material(color, Finish::Marker, &mut materials);
            match system.dimension {
                Dimension::Planar => {
                    // A radius along the body's x axis, sticking out of both faces.
                    let bar = cache.mesh(
                        MeshKey::SpinBar {
                            depth: depth.to_bits(),
                        },
                        &mut meshes,
                        || Mesh::from(Cuboid::new(r * 0.95, r * 0.14, depth * 1.1)),
                    );
                    commands.spawn((
                        Mesh3d(bar),
                        MeshMaterial3d(marker),
                        Transform::from_xyz(r * 0.475, 0.0, 0.0),
                        ChildOf(entity),
                    ));
                }
                Dimension::Spatial => {
                    // Two great circles, around the body's y and x axes: thin
                    // tubes of few facets (triangles cost on a software
                    // renderer), inside the ball's own shadow.
                    let ring = cache.mesh(MeshKey::SpinRing { detail }, &mut meshes, || {
                        Torus {
                            minor_radius: r * 0.05,
                            major_radius: r * 0.99,
                        }
                        .mesh()
                        .minor_resolution(4)
                        .major_resolution(3 * detail.around() as usize / 2)
                        .build()
                    });
                    for rotation in [
                        Quat::IDENTITY,
                        Quat::from_rotation_z(std::f32::consts::FRAC_PI_2),
                    ] {
                        commands.spawn((
                            Mesh3d(ring.clone()),
                            MeshMaterial3d(marker.clone()),
                            NotShadowCaster,
                            Transform::from_rotation(rotation),
                            ChildOf(entity),
                        ));
                    }
                }
            }
        }
    }
}

/// Gives new ghost entities (run B's bodies) their body's mesh in the
/// translucent [`GHOST`] tint, casting no shadow.
fn attach_ghost_meshes(
    mut commands: Commands,
    (sim, compare, epoch): (Res<Sim>, Option<Res<Compare>>, Res<SceneEpoch>),
    mut added: Query<(Entity, &GhostBody, &mut Transform), Added<GhostBody>>,
    mut cache: ResMut<BodyAssets>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<LabMaterial>>,
) {
    // The scene's assets are the bodies' (a new scene empties them first).
    if cache.epoch != Some(*epoch) {
        return;
    }
    let Some(compare) = compare else {
        return;
    };
    let Some(system) = rigid(&compare.b) else {
        return;
    };
    // A's and B's scene is the same.
    let depth = planar_depth(&sim);
    let moving_balls = (0..system.bodies.len())
        .filter(|&i| matches!(system.bodies[i].shape, Shape::Sphere { .. }) && !system.is_fixed(i))
        .count();
    let material = cache.material(GHOST, Finish::Ghost, &mut materials);
    for (entity, ghost, mut transform) in &mut added {
        let Some(spec) = system.bodies.get(ghost.0) else {
            continue;
        };
        let detail = Detail::of(moving_balls, system.is_fixed(ghost.0));
        let (shape, scale) = shared_shape(&spec.shape, system.dimension);
        let mesh = cache.mesh(
            MeshKey::body(&shape, system.dimension, depth, detail),
            &mut meshes,
            || body_mesh(&shape, system.dimension, depth, detail),
        );
        transform.scale = scale * GHOST_SCALE;
        commands.entity(entity).insert((
            Mesh3d(mesh),
            MeshMaterial3d(material.clone()),
            NotShadowCaster,
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Model;

    /// The names of the bodies a shipped scene draws as container walls.
    fn containers(scene: &str) -> Vec<String> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("scenes")
            .join(scene);
        let scene = crate::scene::load(&path).expect("a shipped scene loads");
        let Model::Rigid(system) = &scene.model else {
            return Vec::new();
        };
        let moving = (0..system.bodies.len())
            .filter(|&i| !system.is_fixed(i))
            .count();
        (0..system.bodies.len())
            .filter(|&i| is_container(&system.bodies[i].shape, system.is_fixed(i), moving))
            .map(|i| system.bodies[i].name.clone())
            .collect()
    }

    #[test]
    fn the_walls_around_grains_are_containers_and_nothing_else_is() {
        let silo = containers("silo.ron");
        assert_eq!(silo.len(), 12, "hopper, bin and tray: {silo:?}");
        assert!(silo.iter().all(|n| !n.starts_with("grain")));
        assert_eq!(containers("hourglass.ron").len(), 8);
        assert_eq!(containers("heap.ron").len(), 4, "the box's walls");
        // The ramp, its two rails and the barrier the grains run into; the
        // posts (capsules) and boulders (balls) stay opaque.
        assert_eq!(
            containers("avalanche.ron"),
            ["ramp", "rail+y", "rail-y", "barrier"]
        );
        for scene in ["pile.ron", "pile_100.ron", "wall.ron", "box_stack.ron"] {
            assert!(containers(scene).is_empty(), "{scene}");
        }
    }
}
