//! Gizmos over the scene for the last step's contacts: points, normals,
//! friction impulse arrows, friction pyramid edges, coloured by contact state.

use super::sim::{PreviousState, Sim, physics_to_world, rigid};
use crate::stepper::ContactState;
use bevy::prelude::*;

/// What the overlay draws (the panel's checkboxes).
#[derive(Resource, Debug, Clone, PartialEq)]
pub struct OverlayOptions {
    /// Contact points.
    pub points: bool,
    /// Contact normals.
    pub normals: bool,
    /// Friction impulse arrows.
    pub friction: bool,
    /// Friction pyramid edges (n̄ + μ t(θᵢ)).
    pub pyramid: bool,
    /// Colour contacts by state (stick green, slip orange, separating grey).
    pub color_by_state: bool,
    /// Springs, dampers and joints.
    pub mechanism: bool,
    /// Length of a friction arrow for a force equal to the heaviest body's
    /// weight, as a fraction of the view size.
    pub arrow_scale: f32,
    /// Contact overlays are off while a step has more contacts than this
    /// (a pile or a granular scene becomes a mass of arrows)...
    pub limit: usize,
    /// ...unless the panel's "draw them" asked for them.
    pub drawn_anyway: bool,
}

impl OverlayOptions {
    /// Whether the contact overlays are off for a step with `contacts`.
    pub fn hidden(&self, contacts: usize) -> bool {
        contacts > self.limit && !self.drawn_anyway
    }
}

impl Default for OverlayOptions {
    fn default() -> Self {
        Self {
            points: true,
            normals: true,
            friction: true,
            pyramid: false,
            color_by_state: true,
            mechanism: true,
            arrow_scale: 1.0,
            limit: DEFAULT_LIMIT,
            drawn_anyway: false,
        }
    }
}

/// Contacts above which the overlays start off.
pub const DEFAULT_LIMIT: usize = 200;

/// Contact gizmos, depth-tested against the bodies in scenes of many
/// bodies ([`depth_by_bodies`]).
#[derive(Default, Reflect, GizmoConfigGroup)]
pub struct ContactGizmos;

/// Stick.
pub const STICK: Color = Color::srgb(0.25, 0.85, 0.35);
/// Slip.
pub const SLIP: Color = Color::srgb(1.0, 0.6, 0.1);
/// Separating.
pub const SEPARATING: Color = Color::srgb(0.6, 0.6, 0.6);
/// Contacts when not coloured by state.
pub const NEUTRAL: Color = Color::srgb(0.95, 0.9, 0.3);

/// The colour of a contact state.
pub fn state_color(state: ContactState) -> Color {
    match state {
        ContactState::Stick => STICK,
        ContactState::Slip => SLIP,
        ContactState::Separating => SEPARATING,
    }
}

/// Draws the last step's contacts.
pub struct OverlayPlugin;

impl Plugin for OverlayPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<OverlayOptions>()
            .init_gizmo_group::<ContactGizmos>()
            .add_systems(Startup, configure_gizmos)
            .add_systems(Update, (depth_by_bodies, draw_contacts, draw_mechanism));
    }
}

fn configure_gizmos(mut store: ResMut<GizmoConfigStore>) {
    let (config, _) = store.config_mut::<ContactGizmos>();
    config.depth_bias = 0.0;
    config.line.width = 2.5;
    // A's contacts: in the split view, in A's pane only.
    config.render_layers = bevy::camera::visibility::RenderLayers::layer(super::split::LAYER_A);
}

/// Bodies from which a spatial scene's contact gizmos are depth-tested.
pub const DEPTH_TESTED_FROM: usize = 100;

/// A spatial scene of many bodies (a pile, a silo, an avalanche) tests its
/// contact gizmos against the bodies: a contact behind a wall or inside a
/// bin stays hidden with its bodies. A contact lies between its two bodies,
/// so its arrows run inside one of them: a smaller scene, and any scene in
/// the plane, draws them on top, where a ball's contact on the table shows.
fn depth_by_bodies(mut store: ResMut<GizmoConfigStore>, sim: Res<Sim>) {
    let many = rigid(&sim).is_some_and(|s| s.bodies.len() >= DEPTH_TESTED_FROM);
    let bias = if sim.model().is_planar() || !many {
        -1.0
    } else {
        0.0
    };
    let (config, _) = store.config_mut::<ContactGizmos>();
    if config.depth_bias != bias {
        config.depth_bias = bias;
    }
}

fn v3(v: &nalgebra::Vector3<f64>) -> Vec3 {
    Vec3::new(v.x as f32, v.y as f32, v.z as f32)
}

/// At most this many contacts are drawn; above it the overlay draws every
/// k-th contact (spread over the scene) and the panel says how many of how
/// many. A granular scene has thousands, and their arrows hid the grains.
pub const MAX_DRAWN_CONTACTS: usize = 400;

/// The stride k of the contacts drawn among `count`.
pub fn drawn_stride(count: usize) -> usize {
    count.div_ceil(MAX_DRAWN_CONTACTS).max(1)
}

fn draw_contacts(mut gizmos: Gizmos<ContactGizmos>, sim: Res<Sim>, options: Res<OverlayOptions>) {
    let Some(system) = rigid(&sim) else {
        return;
    };
    let Some(report) = &sim.last else {
        return;
    };
    if options.hidden(report.contacts.len()) {
        return;
    }
    let to_world = physics_to_world(system.dimension);
    // Sizes relative to the view: the camera hint's distance.
    let view = (sim.scene.camera.distance as f32).clamp(1e-3, 1e4);
    let normal_length = (0.12 * view).min(1.5 * system.length_scale() as f32);
    let dot = 0.008 * view;
    let weight =
        system.bodies.iter().map(|b| b.mass).fold(0.0, f64::max) * system.gravity.norm().max(1e-9);
    let h = sim.params.dt.max(1e-12);
    // A friction force equal to the heaviest weight is drawn 0.25 view long.
    let force_scale = 0.25 * view * options.arrow_scale / weight.max(1e-12) as f32;
    let mu = sim.params.mu as f32;
    let stride = drawn_stride(report.contacts.len());
    for contact in report.contacts.iter().step_by(stride) {
        let Some(frame) = &contact.frame else {
            continue;
        };
        let color = if options.color_by_state {
            state_color(contact.state)
        } else {
            NEUTRAL
        };
        let p = to_world * v3(&frame.point);
        let n = (to_world * v3(&frame.normal)).normalize_or_zero();
        if options.points {
            gizmos.sphere(Isometry3d::from_translation(p), dot, color);
        }
        if options.normals {
            gizmos
                .arrow(p, p + n * normal_length, color)
                .with_tip_length(normal_length * 0.2);
        }
        if options.friction && contact.state != ContactState::Separating {
            let force = v3(&contact.friction_impulse) / h as f32;
            // Impacts give huge impulses for one step: cap the drawn length.
            let arrow = (to_world * force * force_scale).clamp_length_max(2.0 * normal_length);
            if arrow.length() > 1e-3 * view && arrow.is_finite() {
                gizmos
                    .arrow(p, p + arrow, Color::srgb(0.95, 0.3, 0.85))
                    .with_tip_length((arrow.length() * 0.25).min(0.04 * view));
            }
        }
        if options.pyramid && !frame.tangents.is_empty() {
            let length = 0.6 * normal_length;
            let edges: Vec<Vec3> = frame
                .tangents
                .iter()
                .map(|t| (n + mu * (to_world * v3(t))).normalize_or_zero() * length)
                .collect();
            let edge_color = color.with_alpha(0.8);
            for (i, e) in edges.iter().enumerate() {
                gizmos.line(p, p + *e, edge_color);
                if edges.len() > 2 {
                    let next = edges[(i + 1) % edges.len()];
                    gizmos.line(p + *e, p + next, edge_color);
                }
            }
            if edges.len() == 2 {
                gizmos.line(p + edges[0], p + edges[1], edge_color);
            }
        }
    }
}

/// Force elements (teal lines between their anchors) and joints (white dots
/// at both anchors), at q interpolated like the bodies.
fn draw_mechanism(
    mut gizmos: Gizmos<ContactGizmos>,
    sim: Res<Sim>,
    previous: Res<PreviousState>,
    fixed: Res<Time<Fixed>>,
    options: Res<OverlayOptions>,
) {
    if !options.mechanism {
        return;
    }
    let Some(system) = rigid(&sim) else {
        return;
    };
    if system.joints.is_empty() && system.elements.is_empty() {
        return;
    }
    let current = &sim.state.q;
    let alpha = fixed.overstep_fraction_f64().clamp(0.0, 1.0);
    let q = if previous.q.len() == current.len() && alpha < 1.0 {
        &previous.q + (current - &previous.q) * alpha
    } else {
        current.clone()
    };
    let to_world = physics_to_world(system.dimension);
    let view = (sim.scene.camera.distance as f32).clamp(1e-3, 1e4);
    let dot = 0.008 * view;
    let spring = Color::srgb(0.2, 0.85, 0.85);
    for (_, a, b) in sim.model().force_element_segments(&q) {
        let (a, b) = (to_world * v3(&a), to_world * v3(&b));
        if a.is_finite() && b.is_finite() {
            gizmos.line(a, b, spring);
            gizmos.sphere(Isometry3d::from_translation(a), 0.6 * dot, spring);
            gizmos.sphere(Isometry3d::from_translation(b), 0.6 * dot, spring);
        }
    }
    for (_, a, b) in sim.model().joint_anchors(&q) {
        for p in [a, b] {
            let p = to_world * v3(&p);
            if p.is_finite() {
                gizmos.sphere(Isometry3d::from_translation(p), 1.2 * dot, Color::WHITE);
            }
        }
    }
}
