//! The cameras: an orthographic one for planar scenes (pan with the right or
//! middle button, zoom with the wheel) and an orbit camera for spatial ones
//! (left drag orbits, right/middle drag pans, wheel zooms), both framed by the
//! scene's camera hint; plus the camera that draws the egui panel over the
//! whole window while the 3D view fills the rest.

use super::panel::PanelLayout;
use super::sim::{SceneEpoch, Sim, physics_to_world};
use super::split::PaneB;
use crate::model::Dimension;
use bevy::camera::visibility::RenderLayers;
use bevy::camera::{CameraOutputMode, RenderTarget, ScalingMode, Viewport};
use bevy::core_pipeline::tonemapping::Tonemapping;
use bevy::input::mouse::{AccumulatedMouseMotion, AccumulatedMouseScroll, MouseScrollUnit};
use bevy::light::{CascadeShadowConfig, CascadeShadowConfigBuilder, ShadowFilteringMethod};
use bevy::prelude::*;
use bevy::render::render_resource::BlendState;
use bevy::window::PrimaryWindow;
use bevy_egui::input::EguiWantsInput;
use bevy_egui::{EguiGlobalSettings, PrimaryEguiContext};

/// The camera that renders the scene.
#[derive(Component, Debug, Clone, Copy)]
pub struct MainCamera;

/// How the main camera looks at the scene (in Bevy's world frame).
#[derive(Component, Debug, Clone, PartialEq)]
pub enum ViewRig {
    /// Orthographic, looking along −z at the x–y plane.
    Planar {
        /// The point at the centre of the view.
        center: Vec2,
        /// Half the visible height, m.
        half_height: f32,
    },
    /// Perspective, orbiting a target.
    Orbit {
        /// The point looked at.
        target: Vec3,
        /// Rotation about the world's y axis, rad.
        yaw: f32,
        /// Elevation (negative looks down), rad.
        pitch: f32,
        /// Distance from the target, m.
        distance: f32,
    },
}

impl ViewRig {
    /// The rig framing a scene by its camera hint, drawn back until every
    /// body is in view.
    pub fn for_scene(sim: &Sim) -> Self {
        let hint = &sim.scene.camera;
        let target = Vec3::new(
            hint.target[0] as f32,
            hint.target[1] as f32,
            hint.target[2] as f32,
        );
        let target = if target.is_finite() {
            target
        } else {
            Vec3::ZERO
        };
        let distance = if hint.distance.is_finite() && hint.distance > 0.0 {
            hint.distance as f32
        } else {
            3.0
        };
        // Widened, never narrowed, until every body is in view.
        let (across, up) = reach_of_bodies(sim, target);
        if sim.model().is_planar() {
            // The timeline covers the bottom band of the view: the bodies fit
            // above it, around the hint's target.
            let half_height = distance
                .max(up * FRAMED_MARGIN / (1.0 - TIMELINE_BAND))
                .max(across * FRAMED_MARGIN / FRAMED_ASPECT);
            Self::Planar {
                center: target.truncate() - Vec2::Y * (TIMELINE_BAND * half_height),
                half_height,
            }
        } else {
            let distance = distance.max(across.max(up) * FRAMED_MARGIN / (FOV / 2.0).sin());
            let dimension = super::sim::rigid(sim).map_or(Dimension::Spatial, |s| s.dimension);
            Self::Orbit {
                target: physics_to_world(dimension) * target,
                yaw: 0.35,
                pitch: -0.38,
                distance,
            }
        }
    }

    /// The camera transform of the rig.
    pub fn transform(&self) -> Transform {
        match *self {
            Self::Planar { center, .. } => {
                Transform::from_xyz(center.x, center.y, PLANAR_EYE).looking_to(Vec3::NEG_Z, Vec3::Y)
            }
            Self::Orbit {
                target,
                yaw,
                pitch,
                distance,
            } => {
                let rotation = Quat::from_euler(EulerRot::YXZ, yaw, pitch, 0.0);
                Transform::from_translation(target + rotation * Vec3::Z * distance)
                    .with_rotation(rotation)
            }
        }
    }

    /// Distances from the camera between which shadows are drawn, m.
    fn shadow_range(&self) -> (f32, f32) {
        match *self {
            // The planar camera stands PLANAR_EYE in front of the z = 0 plane.
            Self::Planar { half_height, .. } => {
                let reach = (2.0 * half_height).clamp(1e-3, 0.9 * PLANAR_EYE);
                (PLANAR_EYE - reach, PLANAR_EYE + reach)
            }
            Self::Orbit { distance, .. } => {
                let distance = distance.clamp(1e-3, 1e5);
                (0.02 * distance, 3.0 * distance)
            }
        }
    }

    /// The camera projection of the rig.
    pub fn projection(&self) -> Projection {
        match *self {
            Self::Planar { half_height, .. } => Projection::from(OrthographicProjection {
                scaling_mode: ScalingMode::FixedVertical {
                    viewport_height: 2.0 * half_height,
                },
                near: -1000.0,
                far: 1000.0,
                ..OrthographicProjection::default_3d()
            }),
            Self::Orbit { distance, .. } => Projection::from(PerspectiveProjection {
                fov: FOV,
                near: (distance * 1e-3).max(1e-4),
                far: distance * 200.0,
                ..default()
            }),
        }
    }
}

/// Distance of the planar (orthographic) camera from the z = 0 plane, m.
const PLANAR_EYE: f32 = 100.0;

/// Vertical field of view of the orbit camera, rad.
const FOV: f32 = std::f32::consts::FRAC_PI_4;

/// The width over the height a scene is framed for: the window beside the
/// panel (1280 − 350 by 800 logical pixels).
const FRAMED_ASPECT: f32 = 1.15;

/// Room around the bodies when a scene is framed.
const FRAMED_MARGIN: f32 = 1.1;

/// The share of the view's height the timeline covers at its bottom (about
/// 72 of 800 logical pixels); a planar scene is framed above it.
pub const TIMELINE_BAND: f32 = 0.09;

/// How far the bodies reach from `target` (physics coordinates): across the
/// view and up it in the plane (|x|, |y|), and in space the radius of the
/// ball about `target` that holds them (both entries), m. Bodies far beyond
/// any view (a 1e6 m plate) are left out.
fn reach_of_bodies(sim: &Sim, target: Vec3) -> (f32, f32) {
    let Some(system) = super::sim::rigid(sim) else {
        return (0.0, 0.0);
    };
    let target = nalgebra::Vector3::new(target.x as f64, target.y as f64, target.z as f64);
    let planar = system.dimension == Dimension::Planar;
    let (mut across, mut up) = (0.0f64, 0.0f64);
    for (i, body) in system.bodies.iter().enumerate() {
        let d = system.position(&sim.state.q, i) - target;
        let r = body.shape.bounding_radius();
        let (x, y) = if planar {
            (d.x.abs() + r, d.y.abs() + r)
        } else {
            (d.norm() + r, d.norm() + r)
        };
        if x.is_finite() && y.is_finite() && x.max(y) < 1e4 {
            across = across.max(x);
            up = up.max(y);
        }
    }
    (across as f32, up as f32)
}

/// Spawns, frames, moves and fits the cameras.
pub struct CameraPlugin;

impl Plugin for CameraPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<super::follow::Follow>()
            .add_systems(Startup, spawn_cameras)
            .add_systems(
                Update,
                (
                    frame_scene,
                    super::follow::follow_camera,
                    camera_controls,
                    apply_rig,
                    fit_shadows,
                )
                    .chain()
                    .after(super::hands::HandsSystems),
            )
            .add_systems(PostUpdate, fit_viewport);
    }
}

/// Where the cameras render instead of the window: `contactlab record` draws
/// into an image of the video's size and reads it back.
#[derive(Resource, Debug, Clone)]
pub struct OffscreenTarget {
    /// The render target.
    pub image: Handle<Image>,
    /// Draw the egui panel too (on its own camera, as in the viewer); without
    /// it the egui context (the overlay) sits on the scene camera, which saves
    /// a full-frame composite per frame.
    pub panel: bool,
    /// Multisampling of the scene camera (`--msaa`).
    pub msaa: Msaa,
}

/// Multisampling of the window's scene camera (`--msaa`, or chosen by the
/// adapter in [`super::run`]); without it, 4 samples.
#[derive(Resource, Debug, Clone, Copy)]
pub struct WindowMsaa(pub Msaa);

fn spawn_cameras(
    mut commands: Commands,
    mut egui: ResMut<EguiGlobalSettings>,
    sim: Res<Sim>,
    offscreen: Option<Res<OffscreenTarget>>,
    (window_msaa, compare): (
        Option<Res<WindowMsaa>>,
        Option<Res<super::compare::Compare>>,
    ),
) {
    egui.auto_create_primary_context = false;
    let target = offscreen.as_ref().map_or_else(RenderTarget::default, |o| {
        RenderTarget::Image(o.image.clone().into())
    });
    let window = window_msaa.map_or(Msaa::Sample4, |m| m.0);
    let msaa = offscreen.as_ref().map_or(window, |o| o.msaa);
    let rig = ViewRig::for_scene(&sim);
    let main = commands
        .spawn((
            Name::new("camera"),
            MainCamera,
            Camera3d::default(),
            Camera {
                order: 0,
                ..default()
            },
            target.clone(),
            rig.projection(),
            rig.transform(),
            rig,
            msaa,
            super::split::main_layers(false),
            // Colours as given: the lab material is display-referred, not HDR.
            Tonemapping::None,
            ShadowFilteringMethod::Hardware2x2,
        ))
        .id();
    // A recording without the panel draws egui through the scene's camera,
    // which then covers the whole image; with a comparison the split view
    // halves it, and the labels span both panes.
    if offscreen.is_some_and(|o| !o.panel) && compare.is_none() {
        commands.entity(main).insert(PrimaryEguiContext);
        return;
    }
    // The egui context lives on its own camera over the whole target, so the
    // 3D camera's viewport can leave out the panel (and, side by side, B's
    // pane).
    commands.spawn((
        Name::new("ui camera"),
        PrimaryEguiContext,
        Camera2d,
        RenderLayers::none(),
        target,
        // It draws only egui's flat shapes: no multisampled target to clear
        // and resolve, no tonemapping.
        Msaa::Off,
        Tonemapping::None,
        Camera {
            order: 1,
            output_mode: CameraOutputMode::Write {
                blend_state: Some(BlendState::ALPHA_BLENDING),
                clear_color: ClearColorConfig::None,
            },
            clear_color: ClearColorConfig::Custom(Color::NONE),
            ..default()
        },
    ));
}

/// Re-frames the camera when another scene is loaded.
pub fn frame_scene(
    sim: Res<Sim>,
    epoch: Res<SceneEpoch>,
    mut seen: Local<Option<SceneEpoch>>,
    mut rig: Single<&mut ViewRig, With<MainCamera>>,
) {
    if seen.is_none() {
        *seen = Some(*epoch);
        return;
    }
    if *seen != Some(*epoch) {
        *seen = Some(*epoch);
        **rig = ViewRig::for_scene(&sim);
    }
}

/// World units per physical pixel at the target, and the viewport's size.
fn viewport_height(camera: &Camera, window: &Window) -> f32 {
    camera
        .viewport
        .as_ref()
        .map(|v| v.physical_size.y as f32)
        .unwrap_or(window.physical_height() as f32)
        .max(1.0)
}

/// Whether the pointer is on the panel or on an egui area (the timeline, a
/// popup), or egui is using it. The panel is drawn on egui's background
/// layer, which egui does not count as an area, so its strip is checked
/// here.
pub fn pointer_over_ui(
    egui: &EguiWantsInput,
    panel: Option<&PanelLayout>,
    window: &Window,
) -> bool {
    let on_panel = panel
        .is_some_and(|p| p.visible && window.cursor_position().is_some_and(|c| c.x <= p.width));
    on_panel || egui.wants_any_pointer_input()
}

/// The wheel zooms and drags orbit (left) or pan (right, middle) the view,
/// unless the pointer is on the panel or the timeline. A drag belongs to
/// where it began until it ends, wherever the pointer goes.
#[allow(clippy::too_many_arguments)]
pub fn camera_controls(
    buttons: Res<ButtonInput<MouseButton>>,
    motion: Res<AccumulatedMouseMotion>,
    scroll: Res<AccumulatedMouseScroll>,
    egui_input: Res<EguiWantsInput>,
    panel: Option<Res<PanelLayout>>,
    window: Single<&Window, With<PrimaryWindow>>,
    camera: Single<(&Camera, &mut ViewRig), With<MainCamera>>,
    grab: Option<Res<super::hands::Grab>>,
    mut drag_on_ui: Local<bool>,
) {
    let (camera, mut rig) = camera.into_inner();
    // A perturbation drag holds the left button: the view stays put.
    let grabbing = grab.is_some_and(|g| g.0.is_some());
    let over_ui = pointer_over_ui(&egui_input, panel.as_deref(), &window);
    let drag_buttons = [MouseButton::Left, MouseButton::Right, MouseButton::Middle];
    if buttons.any_just_pressed(drag_buttons) {
        *drag_on_ui = over_ui;
    } else if !buttons.any_pressed(drag_buttons) {
        *drag_on_ui = false;
    }
    let scale = window.scale_factor().max(0.1);
    let height = viewport_height(camera, &window) / scale; // logical pixels
    let delta = motion.delta; // logical pixels
    let wheel = if over_ui {
        0.0
    } else {
        match scroll.unit {
            MouseScrollUnit::Line => scroll.delta.y,
            MouseScrollUnit::Pixel => scroll.delta.y / 40.0,
        }
    };
    let pan = !*drag_on_ui
        && (buttons.pressed(MouseButton::Right) || buttons.pressed(MouseButton::Middle))
        && delta != Vec2::ZERO;
    let orbit =
        !*drag_on_ui && !grabbing && buttons.pressed(MouseButton::Left) && delta != Vec2::ZERO;
    if !(pan || orbit || wheel != 0.0) {
        return;
    }
    match &mut *rig {
        ViewRig::Planar {
            center,
            half_height,
        } => {
            if pan {
                let per_pixel = 2.0 * *half_height / height;
                *center += Vec2::new(-delta.x, delta.y) * per_pixel;
            }
            if wheel != 0.0 {
                *half_height = (*half_height * (-0.12 * wheel).exp()).clamp(1e-3, 1e4);
            }
        }
        ViewRig::Orbit {
            target,
            yaw,
            pitch,
            distance,
        } => {
            if orbit {
                *yaw -= delta.x * 0.006;
                *pitch = (*pitch - delta.y * 0.006).clamp(-1.55, 1.55);
            }
            if pan {
                let rotation = Quat::from_euler(EulerRot::YXZ, *yaw, *pitch, 0.0);
                let per_pixel = 2.0 * *distance * (FOV / 2.0).tan() / height;
                *target +=
                    (rotation * Vec3::X * -delta.x + rotation * Vec3::Y * delta.y) * per_pixel;
            }
            if wheel != 0.0 {
                *distance = (*distance * (-0.12 * wheel).exp()).clamp(1e-3, 1e4);
            }
        }
    }
}

/// One shadow cascade around what the camera frames, refitted when the view
/// changes: sharper than Bevy's default of four cascades out to 150 m, and one
/// shadow map to render instead of four.
fn fit_shadows(
    rig: Single<&ViewRig, (With<MainCamera>, Changed<ViewRig>)>,
    mut lights: Query<&mut CascadeShadowConfig, With<DirectionalLight>>,
) {
    let (near, far) = rig.shadow_range();
    for mut config in &mut lights {
        *config = CascadeShadowConfigBuilder {
            num_cascades: 1,
            minimum_distance: near,
            maximum_distance: far,
            first_cascade_far_bound: far,
            overlap_proportion: 0.2,
        }
        .build();
    }
}

/// The camera components the rig drives.
type RigView<'a> = (&'a ViewRig, &'a mut Transform, &'a mut Projection);

/// The cameras a rig drives.
type Rigged = Or<(With<MainCamera>, With<PaneB>)>;

/// Moves the cameras to their rig: the main camera, and in the split view
/// B's, which shares the main camera's rig.
pub fn apply_rig(mut cameras: Query<RigView, (Rigged, Changed<ViewRig>)>) {
    for (rig, mut transform, mut projection) in &mut cameras {
        *transform = rig.transform();
        *projection = rig.projection();
    }
}

/// The main camera, not B's pane.
type MainOnly = (With<MainCamera>, Without<PaneB>);

/// Keeps the 3D view out from under the panel, and in compare mode's split
/// view gives each pane ([`super::split::pane_viewports`]) its half. The size
/// is the target's as it is now (a window resized this frame, e.g. for a
/// recording, must not keep a viewport larger than itself), not the
/// camera's, which follows a frame later.
pub fn fit_viewport(
    layout: Res<PanelLayout>,
    mut main: Single<(&mut Camera, &RenderTarget), MainOnly>,
    mut pane_b: Query<&mut Camera, (With<PaneB>, Without<MainCamera>)>,
    windows: Query<&Window, With<PrimaryWindow>>,
    images: Res<Assets<Image>>,
) {
    let (camera, target) = &mut *main;
    let (size, scale) = match target {
        RenderTarget::Image(target) => match images.get(&target.handle) {
            Some(image) => (image.size(), target.scale_factor),
            None => return,
        },
        _ => match windows.single() {
            Ok(window) => (window.physical_size(), window.scale_factor()),
            Err(_) => return,
        },
    };
    let left = if layout.visible {
        (layout.width * scale).round().max(0.0) as u32
    } else {
        0
    };
    let (viewport, pane) = match pane_b.single_mut() {
        Ok(pane) => match super::split::pane_viewports(left, size) {
            Some((a, b)) => (Some(a), Some((pane, b))),
            None => (None, None),
        },
        Err(_) => {
            let whole = (size.x > left + 16 && size.y > 16 && left > 0).then(|| Viewport {
                physical_position: UVec2::new(left, 0),
                physical_size: UVec2::new(size.x - left, size.y),
                ..default()
            });
            (whole, None)
        }
    };
    set_viewport(camera, viewport);
    if let Some((mut pane, viewport)) = pane {
        set_viewport(&mut pane, Some(viewport));
    }
}

/// Sets a camera's viewport, leaving the camera unchanged (not marked
/// changed) when it is the same.
fn set_viewport(camera: &mut Mut<Camera>, viewport: Option<Viewport>) {
    let same = match (&camera.viewport, &viewport) {
        (None, None) => true,
        (Some(a), Some(b)) => {
            a.physical_position == b.physical_position && a.physical_size == b.physical_size
        }
        _ => false,
    };
    if !same {
        camera.viewport = viewport;
    }
}
