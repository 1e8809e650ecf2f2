//! Hands on the scene: what the pointer does to it. A Bevy picking backend
//! that ray-casts the physics shapes (and a linear system's drawing parts),
//! selection (click; Esc clears), the perturbation drag (Ctrl + left drag, or
//! left drag in the "perturb" tool: a spring–damper from the grabbed point to
//! the cursor, on the plane through the grab point that faces the camera),
//! and the throw tool (a click throws a sphere or a box from the camera toward
//! the clicked point).
//!
//! The physics lives in the core ([`crate::model::perturbation`],
//! [`crate::sim::throw`], [`crate::model::RigidSystem::ray_cast`]); this is
//! the wiring from pointer events to it. In a comparison the hands act on
//! both runs alike: a throw adds the same body to B ([`Compare::throw`]),
//! B's steps take A's spring ([`super::worker::StepJob::start`]), and in the
//! split view B's pane picks B's bodies (its ghosts) as A's pane picks A's.
//!
//! [`HandsPlugin`] needs only Bevy's picking plugins, so it runs headless
//! (`tests/viewer/pointer.rs` drives it with synthetic pointer events);
//! [`HandsDrawPlugin`] draws the highlight and the spring.

use super::camera::{MainCamera, ViewRig};
use super::compare::{Compare, GhostBody};
use super::drawing::PartVisual;
use super::sim::{BodyVisual, PreviousState, SceneEpoch, Sim, physics_to_world, rigid};
use super::split::PaneB;
use crate::model::{Dimension, Model, Perturbation};
use crate::sim::throw::{self, Projectile};
use bevy::picking::PickingSystems;
use bevy::picking::backend::ray::RayMap;
use bevy::picking::backend::{HitData, PointerHits};
use bevy::picking::events::{Click, Pointer, Press};
use bevy::picking::pointer::{PointerButton, PointerId, PointerLocation, PointerPress};
use bevy::prelude::*;
use bevy_egui::input::EguiWantsInput;
use nalgebra::Vector3;

/// What a left click or drag in the view does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Tool {
    /// Click selects; Ctrl + drag perturbs; drag orbits (space).
    #[default]
    Select,
    /// Drag on a body perturbs it.
    Perturb,
    /// Click throws a projectile toward the clicked point.
    Throw,
}

/// The pointer tools' settings (the panel's "Hands" section).
#[derive(Resource, Debug, Clone, PartialEq)]
pub struct Hands {
    /// The current tool.
    pub tool: Tool,
    /// The perturbation's spring rate κ = k/m, 1/s² (k = κ m, c = 2√κ m).
    pub rate: f64,
    /// What the throw tool throws.
    pub projectile: Projectile,
    /// Launch speed of a throw, m/s.
    pub throw_speed: f64,
    /// The last thing a tool could not do, for the panel.
    pub message: Option<String>,
}

impl Default for Hands {
    fn default() -> Self {
        Self {
            tool: Tool::Select,
            rate: Perturbation::DEFAULT_RATE,
            projectile: Projectile::Sphere,
            throw_speed: 5.0,
            message: None,
        }
    }
}

/// What is selected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Selected {
    /// A rigid body, by index.
    Body(usize),
    /// A part of a scene's drawing (a linear system's), by index.
    Part(usize),
}

/// The selection (highlighted, shown in the inspector, followed by the camera
/// when "follow selected" is on).
#[derive(Resource, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Selection(pub Option<Selected>);

/// A perturbation drag in progress.
#[derive(Debug, Clone, PartialEq)]
pub struct Grabbing {
    /// The pointer holding it.
    pub pointer: PointerId,
    /// The body.
    pub body: usize,
    /// The grab point in the body's axes, m.
    pub local: Vector3<f64>,
    /// A point of the drag plane (the grab point when grabbed), physics frame.
    pub plane_point: Vector3<f64>,
    /// The drag plane's normal (towards the camera), physics frame.
    pub plane_normal: Vector3<f64>,
    /// Where the pointer pulls to now, physics frame, m.
    pub target: Vector3<f64>,
}

/// The drag in progress, if any.
#[derive(Resource, Debug, Clone, PartialEq, Default)]
pub struct Grab(pub Option<Grabbing>);

/// The hands' systems, in `Update` (the camera's controls run after them so
/// that a drag that grabs a body does not also orbit).
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HandsSystems;

/// Picking, selection, perturbation and throwing (no rendering).
pub struct HandsPlugin;

impl Plugin for HandsPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<Hands>()
            .init_resource::<Selection>()
            .init_resource::<Grab>()
            .add_systems(PreUpdate, physics_backend.in_set(PickingSystems::Backend))
            .add_systems(
                Update,
                (forget_on_scene_change, press, click, drive_grab, escape)
                    .chain()
                    .in_set(HandsSystems),
            );
    }
}

/// Draws the selection's outline and the perturbation's spring.
pub struct HandsDrawPlugin;

impl Plugin for HandsDrawPlugin {
    fn build(&self, app: &mut App) {
        app.add_systems(Update, (draw_selection, draw_spring).after(HandsSystems));
    }
}

fn to_f64(v: Vec3) -> Vector3<f64> {
    Vector3::new(v.x as f64, v.y as f64, v.z as f64)
}

fn to_f32(v: &Vector3<f64>) -> Vec3 {
    Vec3::new(v.x as f32, v.y as f32, v.z as f32)
}

/// The rotation from Bevy's world to the physics frame.
fn world_to_physics(sim: &Sim) -> Quat {
    let dimension = rigid(sim).map_or(Dimension::Planar, |s| s.dimension);
    physics_to_world(dimension).inverse()
}

/// A ray in Bevy's world as (origin, direction) in the physics frame.
fn ray_in_physics(sim: &Sim, ray: &Ray3d) -> (Vector3<f64>, Vector3<f64>) {
    let r = world_to_physics(sim);
    (to_f64(r * ray.origin), to_f64(r * *ray.direction))
}

fn egui_has_pointer(egui: &Option<Res<EguiWantsInput>>) -> bool {
    egui.as_ref().is_some_and(|e| e.wants_any_pointer_input())
}

/// The cameras whose view the pointer acts in: the main one, and in the
/// split view B's pane.
type Viewing = Or<(With<MainCamera>, With<PaneB>)>;

/// The picking backend: for each pointer's ray from the main camera, the
/// body the physics shapes say it is over (in a linear system, the drawing
/// part), as a hit on that body's entity; from B's pane, the body of run B,
/// as a hit on its ghost.
#[allow(clippy::too_many_arguments)]
pub fn physics_backend(
    ray_map: Res<RayMap>,
    cameras: Query<(&Camera, Has<PaneB>), Viewing>,
    sim: Res<Sim>,
    compare: Option<Res<Compare>>,
    bodies: Query<(Entity, &BodyVisual)>,
    ghosts: Query<(Entity, &GhostBody)>,
    parts: Query<(Entity, &PartVisual)>,
    egui: Option<Res<EguiWantsInput>>,
    mut output: MessageWriter<PointerHits>,
) {
    if egui_has_pointer(&egui) {
        return;
    }
    for (ray_id, ray) in ray_map.iter() {
        let Ok((camera, pane_b)) = cameras.get(ray_id.camera) else {
            continue;
        };
        let (origin, direction) = ray_in_physics(&sim, ray);
        let to_world = physics_to_world(rigid(&sim).map_or(Dimension::Planar, |s| s.dimension));
        let mut picks = Vec::new();
        // The run this camera shows: B's bodies in B's pane.
        let run = match (pane_b, compare.as_deref()) {
            (true, Some(compare)) => &compare.b,
            (true, None) => continue,
            (false, _) => &**sim,
        };
        let entity_of = |i: usize| {
            if pane_b {
                ghosts.iter().find(|(_, g)| g.0 == i).map(|(e, _)| e)
            } else {
                bodies.iter().find(|(_, b)| b.0 == i).map(|(e, _)| e)
            }
        };
        match run.model() {
            Model::Rigid(system) => {
                if let Some(hit) = system.ray_cast(&run.state.q, &origin, &direction)
                    && let Some(entity) = entity_of(hit.body)
                {
                    picks.push((
                        entity,
                        HitData::new(
                            ray_id.camera,
                            hit.distance as f32,
                            Some(to_world * to_f32(&hit.point)),
                            Some(to_world * to_f32(&hit.normal)),
                        ),
                    ));
                }
            }
            Model::Linear(_) if pane_b => {}
            Model::Linear(_) => {
                // Drawings lie in z = 0; later parts are drawn in front.
                if direction.z != 0.0 {
                    let t = -origin.z / direction.z;
                    let p = origin + direction * t;
                    let on = sim
                        .scene
                        .drawing
                        .iter()
                        .enumerate()
                        .rev()
                        .find(|(_, part)| part.contains(&sim.state.q, [p.x, p.y]))
                        .map(|(i, _)| i);
                    if t >= 0.0
                        && let Some(i) = on
                        && let Some((entity, _)) = parts.iter().find(|(_, v)| v.0 == i)
                    {
                        picks.push((
                            entity,
                            HitData::new(ray_id.camera, t as f32, Some(to_f32(&p)), Some(Vec3::Z)),
                        ));
                    }
                }
            }
        }
        if !picks.is_empty() {
            output.write(PointerHits::new(ray_id.pointer, picks, camera.order as f32));
        }
    }
}

/// A new scene: nothing selected or held.
fn forget_on_scene_change(
    epoch: Res<SceneEpoch>,
    mut seen: Local<Option<SceneEpoch>>,
    mut selection: ResMut<Selection>,
    mut grab: ResMut<Grab>,
    sim: Res<Sim>,
) {
    if *seen != Some(*epoch) {
        *seen = Some(*epoch);
        selection.0 = None;
        grab.0 = None;
        return;
    }
    // Scrubbing back before a throw, or a reset, can remove the selected body.
    let bodies = rigid(&sim).map_or(0, |s| s.bodies.len());
    if let Some(Selected::Body(i)) = selection.0
        && i >= bodies
    {
        selection.0 = None;
    }
    if grab
        .0
        .as_ref()
        .is_some_and(|g| g.body >= bodies || sim.perturbation().is_none())
    {
        grab.0 = None;
    }
}

fn ctrl_held(keys: &Option<Res<ButtonInput<KeyCode>>>) -> bool {
    keys.as_ref()
        .is_some_and(|k| k.pressed(KeyCode::ControlLeft) || k.pressed(KeyCode::ControlRight))
}

/// A left press on a body with Ctrl or in the perturb tool grabs it.
#[allow(clippy::too_many_arguments)]
fn press(
    mut presses: MessageReader<Pointer<Press>>,
    keys: Option<Res<ButtonInput<KeyCode>>>,
    mut hands: ResMut<Hands>,
    mut sim: ResMut<Sim>,
    mut grab: ResMut<Grab>,
    mut selection: ResMut<Selection>,
    (bodies, ghosts, compare): (Query<&BodyVisual>, Query<&GhostBody>, Option<Res<Compare>>),
    parts: Query<&PartVisual>,
    cameras: Query<&GlobalTransform, Viewing>,
) {
    let ctrl = ctrl_held(&keys);
    for event in presses.read() {
        if event.event.button != PointerButton::Primary || !(ctrl || hands.tool == Tool::Perturb) {
            continue;
        }
        if parts.get(event.entity).is_ok() {
            hands.message = Some(
                "A generalized linear system has no bodies: its coordinates take no external force here"
                    .to_owned(),
            );
            continue;
        }
        // A body of A, or a ghost of B's (grabbed at the same point of the
        // same body in both runs).
        let held = match (bodies.get(event.entity), ghosts.get(event.entity)) {
            (Ok(body), _) => Some((body.0, &**sim)),
            (_, Ok(ghost)) => compare.as_deref().map(|c| (ghost.0, &c.b)),
            _ => None,
        };
        let (Some((i, run)), Some(position)) = (held, event.event.hit.position) else {
            continue;
        };
        let Model::Rigid(system) = run.model() else {
            continue;
        };
        if i >= system.bodies.len() {
            continue;
        }
        let r = world_to_physics(&sim);
        let point = to_f64(r * position);
        let local =
            system.rotation(&run.state.q, i).inverse() * (point - system.position(&run.state.q, i));
        let plane_normal = match system.dimension {
            Dimension::Planar => Vector3::z(),
            Dimension::Spatial => {
                let Ok(camera) = cameras.get(event.event.hit.camera) else {
                    continue;
                };
                to_f64(r * *camera.back())
            }
        };
        let mass = system.bodies[i].mass;
        let perturbation = Perturbation::with_rate(i, mass, local, point, hands.rate);
        match sim.set_perturbation(Some(perturbation)) {
            Ok(()) => {
                selection.0 = Some(Selected::Body(i));
                hands.message = None;
                grab.0 = Some(Grabbing {
                    pointer: event.pointer_id,
                    body: i,
                    local,
                    plane_point: point,
                    plane_normal,
                    target: point,
                });
            }
            Err(e) => hands.message = Some(e.to_string()),
        }
    }
}

/// A left click selects what it is on (select tool), or throws (throw tool).
#[allow(clippy::too_many_arguments)]
fn click(
    mut clicks: MessageReader<Pointer<Click>>,
    keys: Option<Res<ButtonInput<KeyCode>>>,
    mut hands: ResMut<Hands>,
    mut sim: ResMut<Sim>,
    mut selection: ResMut<Selection>,
    (bodies, ghosts, mut compare): (
        Query<&BodyVisual>,
        Query<&GhostBody>,
        Option<ResMut<Compare>>,
    ),
    parts: Query<&PartVisual>,
    cameras: Query<(&Camera, &GlobalTransform, &ViewRig), Viewing>,
    egui: Option<Res<EguiWantsInput>>,
) {
    let ctrl = ctrl_held(&keys);
    for event in clicks.read() {
        if event.event.button != PointerButton::Primary {
            continue;
        }
        let target = bodies
            .get(event.entity)
            .map(|b| Selected::Body(b.0))
            .or_else(|_| ghosts.get(event.entity).map(|g| Selected::Body(g.0)))
            .or_else(|_| parts.get(event.entity).map(|p| Selected::Part(p.0)))
            .ok();
        match hands.tool {
            Tool::Throw if !ctrl => {
                if egui_has_pointer(&egui) {
                    continue;
                }
                // The camera of the pane the pointer is in.
                let position = event.pointer_location.position;
                let in_view = |camera: &Camera| {
                    camera
                        .logical_viewport_rect()
                        .is_none_or(|rect| rect.contains(position))
                };
                let Some((camera, transform, rig)) = cameras.iter().find(|(c, _, _)| in_view(c))
                else {
                    continue;
                };
                let Ok(ray) = camera.viewport_to_world(transform, position) else {
                    continue;
                };
                let aimed = event.event.hit.position.filter(|_| target.is_some());
                hands.message = throw_toward(
                    (&mut sim, compare.as_deref_mut()),
                    &hands,
                    &ray,
                    aimed,
                    (transform, rig),
                )
                .err();
            }
            _ => {
                if let Some(selected) = target {
                    selection.0 = Some(selected);
                }
            }
        }
    }
}

/// Throws the tool's projectile along the camera ray through the clicked
/// point (`aimed`: the point on the body clicked, world frame).
fn throw_toward(
    (sim, compare): (&mut Sim, Option<&mut Compare>),
    hands: &Hands,
    ray: &Ray3d,
    aimed: Option<Vec3>,
    (camera, rig): (&GlobalTransform, &ViewRig),
) -> Result<(), String> {
    let Model::Rigid(system) = sim.model() else {
        return Err(
            "A generalized linear system has no bodies: nothing can be thrown into it".to_owned(),
        );
    };
    let r = world_to_physics(sim);
    let (origin, direction) = ray_in_physics(sim, ray);
    let toward = match aimed {
        Some(p) => to_f64(r * p),
        None => throw::aim_point(system, &sim.state.q, &origin, &direction).unwrap_or_else(|| {
            // Nothing there: where the ray crosses the plane through what the
            // camera looks at.
            let (look_at, normal) = match rig {
                ViewRig::Orbit { target, .. } => (to_f64(r * *target), to_f64(r * *camera.back())),
                ViewRig::Planar { center, .. } => (
                    Vector3::new(center.x as f64, center.y as f64, 0.0),
                    Vector3::z(),
                ),
            };
            let approach = normal.dot(&direction);
            let t = if approach.abs() > 1e-9 {
                normal.dot(&(look_at - origin)) / approach
            } else {
                (look_at - origin).norm()
            };
            origin + direction * t
        }),
    };
    let from = match (system.dimension, rig) {
        (
            Dimension::Planar,
            ViewRig::Planar {
                center,
                half_height,
            },
        ) => {
            // From the upper corner of the view on the other side.
            let side = if toward.x >= center.x as f64 {
                -1.0
            } else {
                1.0
            };
            let h = *half_height as f64;
            Vector3::new(
                center.x as f64 + side * 1.2 * h,
                center.y as f64 + 0.8 * h,
                0.0,
            )
        }
        _ => {
            // From a little in front of the eye.
            let eye = to_f64(r * camera.translation());
            eye + (toward - eye) * 0.25
        }
    };
    let spec = throw::projectile(sim, hands.projectile, from, toward, hands.throw_speed)
        .ok_or_else(|| {
            "nothing to throw toward (the point is where the throw starts)".to_owned()
        })?;
    sim.add_body(spec.clone()).map_err(|e| e.to_string())?;
    match compare {
        Some(compare) => compare.throw(spec),
        None => Ok(()),
    }
}

/// Moves the held perturbation's target with the pointer (its ray through
/// the drag plane) and lets go when the button is released.
fn drive_grab(
    mut grab: ResMut<Grab>,
    mut sim: ResMut<Sim>,
    hands: Res<Hands>,
    pointers: Query<(&PointerId, &PointerPress, &PointerLocation)>,
    ray_map: Res<RayMap>,
    cameras: Query<(Entity, &GlobalTransform), Viewing>,
) {
    let Some(held) = grab.0.as_mut() else {
        return;
    };
    let pressed = pointers
        .iter()
        .find(|(id, _, _)| **id == held.pointer)
        .is_some_and(|(_, press, _)| press.is_primary_pressed());
    if !pressed {
        grab.0 = None;
        let _ = sim.set_perturbation(None);
        return;
    }
    // The pointer's ray from whichever pane it is over (the two cameras
    // share one pose).
    let found = ray_map.iter().find_map(|(id, ray)| {
        let transform = cameras.get(id.camera).ok()?.1;
        (id.pointer == held.pointer).then_some((*ray, transform))
    });
    if let Some((ray, transform)) = found {
        let (origin, direction) = ray_in_physics(&sim, &ray);
        if sim.model().is_planar() || rigid(&sim).is_none() {
            held.plane_normal = Vector3::z();
        } else {
            // The plane faces the camera as it is now (it may have orbited).
            held.plane_normal = to_f64(world_to_physics(&sim) * *transform.back());
        }
        let denominator = held.plane_normal.dot(&direction);
        if denominator.abs() > 1e-9 {
            let t = held.plane_normal.dot(&(held.plane_point - origin)) / denominator;
            let point = origin + direction * t;
            if point.iter().all(|x| x.is_finite()) {
                held.target = point;
            }
        }
    }
    let Some(system) = rigid(&sim) else {
        return;
    };
    let Some(mass) = system.bodies.get(held.body).map(|b| b.mass) else {
        return;
    };
    let perturbation =
        Perturbation::with_rate(held.body, mass, held.local, held.target, hands.rate);
    if sim.perturbation() != Some(&perturbation) {
        let _ = sim.set_perturbation(Some(perturbation));
    }
}

/// Esc clears the selection.
fn escape(keys: Option<Res<ButtonInput<KeyCode>>>, mut selection: ResMut<Selection>) {
    if keys.is_some_and(|k| k.just_pressed(KeyCode::Escape)) {
        selection.0 = None;
    }
}

/// Highlight colour of the selection.
pub const HIGHLIGHT: Color = Color::srgb(1.0, 0.92, 0.35);

/// Colour of the perturbation's spring.
pub const SPRING: Color = Color::srgb(1.0, 0.35, 0.3);

/// An outline around the selected body (slightly larger than it) or part.
fn draw_selection(
    mut gizmos: Gizmos<super::overlay::ContactGizmos>,
    sim: Res<Sim>,
    selection: Res<Selection>,
    bodies: Query<(&BodyVisual, &GlobalTransform)>,
    parts: Query<(&PartVisual, &GlobalTransform)>,
) {
    use crate::geometry::Shape;
    match selection.0 {
        Some(Selected::Body(i)) => {
            let Some(system) = rigid(&sim) else {
                return;
            };
            let (Some(body), Some((_, placed))) =
                (system.bodies.get(i), bodies.iter().find(|(b, _)| b.0 == i))
            else {
                return;
            };
            let (_, rotation, translation) = placed.to_scale_rotation_translation();
            let grow = 1.06;
            let depth = super::visuals::planar_depth(&sim) * 0.5 + 1e-3;
            let front = match system.dimension {
                Dimension::Planar => translation + Vec3::Z * depth,
                Dimension::Spatial => translation,
            };
            let iso = Isometry3d::new(front, rotation);
            match (body.shape, system.dimension) {
                (Shape::Sphere { radius }, Dimension::Planar) => {
                    gizmos.circle(iso, radius as f32 * grow, HIGHLIGHT);
                }
                (Shape::Sphere { radius }, Dimension::Spatial) => {
                    gizmos.sphere(iso, radius as f32 * grow, HIGHLIGHT);
                }
                (Shape::Box { half_extents: h }, Dimension::Planar) => {
                    gizmos.rect(
                        iso,
                        Vec2::new(2.0 * h[0] as f32, 2.0 * h[1] as f32) * grow,
                        HIGHLIGHT,
                    );
                }
                (Shape::Box { half_extents: h }, Dimension::Spatial) => {
                    gizmos.cube(
                        Transform::from_translation(translation)
                            .with_rotation(rotation)
                            .with_scale(
                                Vec3::new(h[0] as f32, h[1] as f32, h[2] as f32) * 2.0 * grow,
                            ),
                        HIGHLIGHT,
                    );
                }
                (
                    Shape::Capsule {
                        half_length,
                        radius,
                    },
                    dimension,
                ) => {
                    let (hl, r) = (half_length as f32, radius as f32 * grow);
                    let axis = rotation * Vec3::X;
                    let side = match dimension {
                        Dimension::Planar => rotation * Vec3::Y,
                        Dimension::Spatial => rotation * Vec3::Y,
                    };
                    for s in [-1.0, 1.0] {
                        gizmos.line(
                            front - axis * hl + side * r * s,
                            front + axis * hl + side * r * s,
                            HIGHLIGHT,
                        );
                        gizmos.circle(
                            Isometry3d::new(front + axis * hl * s, rotation),
                            r,
                            HIGHLIGHT,
                        );
                    }
                }
            }
        }
        Some(Selected::Part(i)) => {
            let Some((_, placed)) = parts.iter().find(|(p, _)| p.0 == i) else {
                return;
            };
            let view = (sim.scene.camera.distance as f32).clamp(1e-4, 1e4);
            gizmos.circle(
                Isometry3d::from_translation(placed.translation() + Vec3::Z * 0.01),
                0.06 * view,
                HIGHLIGHT,
            );
        }
        None => {}
    }
}

/// The perturbation as a line from the grabbed point (as drawn, between the
/// last two states) to the target.
fn draw_spring(
    mut gizmos: Gizmos<super::overlay::ContactGizmos>,
    sim: Res<Sim>,
    previous: Res<PreviousState>,
    fixed: Res<Time<Fixed>>,
) {
    let Some(system) = rigid(&sim) else {
        return;
    };
    let Some(p) = sim.perturbation() else {
        return;
    };
    if p.body >= system.bodies.len() {
        return;
    }
    let alpha = fixed.overstep_fraction_f64().clamp(0.0, 1.0);
    let q = if previous.q.len() == sim.state.q.len() && alpha < 1.0 {
        &previous.q + (&sim.state.q - &previous.q) * alpha
    } else {
        sim.state.q.clone()
    };
    let to_world = physics_to_world(system.dimension);
    let grab = to_world * to_f32(&system.world_point(&q, p.body, &p.grab));
    let target = to_world * to_f32(&p.target);
    let view = (sim.scene.camera.distance as f32).clamp(1e-3, 1e4);
    let lift = if system.dimension == Dimension::Planar {
        Vec3::Z * (super::visuals::planar_depth(&sim) + 1e-3)
    } else {
        Vec3::ZERO
    };
    if grab.is_finite() && target.is_finite() {
        gizmos.line(grab + lift, target + lift, SPRING);
        gizmos.sphere(
            Isometry3d::from_translation(grab + lift),
            0.008 * view,
            SPRING,
        );
        gizmos.sphere(
            Isometry3d::from_translation(target + lift),
            0.012 * view,
            SPRING,
        );
    }
}
