//! Compare mode's split view: A and B side by side, each in half of the 3D
//! view, under two cameras that share one [`ViewRig`] (an orbit, pan or zoom
//! in either pane moves both). The ghost view ([`CompareView::Ghost`]) is the
//! default; the panel's "Compare" section switches.
//!
//! What each camera draws is chosen by render layers: the surfaces, the
//! lights and the grids on [`SHARED_LAYER`], A's bodies (or a linear
//! system's drawing parts) and the contact overlays on [`LAYER_A`], B's
//! ghosts (bodies and parts) on [`LAYER_B`]. In the ghost view the
//! main camera draws all three; in the split view it draws A's pane (shared
//! and A) and the [`PaneB`] camera B's (shared and B).

use super::camera::{MainCamera, ViewRig};
use super::compare::{Compare, GhostBody};
use super::drawing::{GhostPart, PartVisual};
use super::panel::PanelLayout;
use super::sim::{BodyVisual, SceneEpoch};
use crate::scene::comparison::CompareView;
use bevy::camera::visibility::RenderLayers;
use bevy::camera::{RenderTarget, Viewport};
use bevy::core_pipeline::tonemapping::Tonemapping;
use bevy::light::ShadowFilteringMethod;
use bevy::prelude::*;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};

/// What both runs show alike: surfaces, lights, grids.
pub const SHARED_LAYER: usize = 0;
/// Run A's bodies and the contact overlays (A's contacts).
pub const LAYER_A: usize = 1;
/// Run B's bodies (the ghosts).
pub const LAYER_B: usize = 2;

/// The layers the main camera draws: all in the ghost view, A's pane in the
/// split view.
pub fn main_layers(split: bool) -> RenderLayers {
    if split {
        RenderLayers::from_layers(&[SHARED_LAYER, LAYER_A])
    } else {
        RenderLayers::from_layers(&[SHARED_LAYER, LAYER_A, LAYER_B])
    }
}

/// The camera of B's pane (the right one) in the split view; the main
/// camera draws A's.
#[derive(Component, Debug, Clone, Copy)]
pub struct PaneB;

/// Whether a comparison is open and shown side by side.
pub fn is_split(compare: Option<&Compare>) -> bool {
    compare.is_some_and(|c| c.view == CompareView::Split)
}

/// Puts the bodies, ghosts and lights on their layers, keeps B's camera while
/// the view is split and links it to the main camera.
pub struct SplitPlugin;

impl Plugin for SplitPlugin {
    fn build(&self, app: &mut App) {
        app.add_systems(
            Update,
            (layer_entities, sync_pane_b)
                .chain()
                .after(super::camera::frame_scene)
                .before(super::camera::apply_rig),
        )
        .add_systems(EguiPrimaryContextPass, pane_labels);
    }
}

/// A's bodies and drawing parts.
type OfA = Or<(With<BodyVisual>, With<PartVisual>)>;
/// B's ghosts: its bodies and drawing parts.
type OfB = Or<(With<GhostBody>, With<GhostPart>)>;

/// A body's or drawing part's meshes (the body and its spin markers) on
/// [`LAYER_A`], a ghost's on [`LAYER_B`], lights on every layer (they light and shadow both runs).
type Unlayered = (
    Without<RenderLayers>,
    Or<(With<Mesh3d>, With<DirectionalLight>)>,
);

fn layer_entities(
    mut commands: Commands,
    unlayered: Query<(Entity, Option<&ChildOf>, Has<DirectionalLight>), Unlayered>,
    bodies: Query<(), OfA>,
    ghosts: Query<(), OfB>,
) {
    for (entity, parent, light) in &unlayered {
        // The entity, or the body or drawing part it is a mesh of.
        let of =
            |set: &dyn Fn(Entity) -> bool| set(entity) || parent.is_some_and(|p| set(p.parent()));
        let layers = if light {
            RenderLayers::from_layers(&[SHARED_LAYER, LAYER_A, LAYER_B])
        } else if of(&|e| ghosts.contains(e)) {
            RenderLayers::layer(LAYER_B)
        } else if of(&|e| bodies.contains(e)) {
            RenderLayers::layer(LAYER_A)
        } else {
            continue;
        };
        commands.entity(entity).insert(layers);
    }
}

/// How much farther the camera stands (or how much more a planar view
/// shows) in the split view: a pane is half as wide as the view a scene is
/// framed for, so that a framed scene stays about whole in it.
pub const SPLIT_ZOOM: f32 = 1.4;

/// The rig drawn back by `factor` (a planar view widened by it).
fn zoomed(rig: &mut ViewRig, factor: f32) {
    match rig {
        ViewRig::Planar { half_height, .. } => *half_height *= factor,
        ViewRig::Orbit { distance, .. } => *distance *= factor,
    }
}

/// The main camera as B's pane copies it.
type MainView<'a> = (
    &'a mut ViewRig,
    &'a RenderTarget,
    &'a Msaa,
    &'a mut RenderLayers,
);

/// Spawns B's camera when the view is split (a copy of the main camera on
/// [`LAYER_B`]) and despawns it otherwise; the main camera's layers follow,
/// and the view draws back by [`SPLIT_ZOOM`] on entering the split view (or
/// a scene framed in it) and comes back on leaving it. B's camera takes the
/// main camera's rig whenever it changes: the cameras are linked.
pub fn sync_pane_b(
    mut commands: Commands,
    (compare, epoch): (Option<Res<Compare>>, Res<SceneEpoch>),
    mut main: Query<MainView, (With<MainCamera>, Without<PaneB>)>,
    mut panes: Query<(Entity, &mut ViewRig), With<PaneB>>,
    mut seen: Local<Option<(bool, SceneEpoch)>>,
) {
    let split = is_split(compare.as_deref());
    let Ok((mut rig, target, msaa, mut layers)) = main.single_mut() else {
        return;
    };
    // A new scene is framed for the whole view (`frame_scene`).
    let framed_whole = match *seen {
        Some((was_split, seen_epoch)) if seen_epoch == *epoch => !was_split,
        _ => true,
    };
    if split && framed_whole {
        zoomed(&mut rig, SPLIT_ZOOM);
    } else if !split && !framed_whole {
        zoomed(&mut rig, 1.0 / SPLIT_ZOOM);
    }
    *seen = Some((split, *epoch));
    let wanted = main_layers(split);
    if *layers != wanted {
        *layers = wanted;
    }
    if !split {
        for (entity, _) in &panes {
            commands.entity(entity).despawn();
        }
        return;
    }
    if let Some((_, mut pane_rig)) = panes.iter_mut().next() {
        if *pane_rig != *rig {
            *pane_rig = rig.clone();
        }
        return;
    }
    commands.spawn((
        Name::new("camera B"),
        PaneB,
        Camera3d::default(),
        // Before the main camera, on the same target: it clears the target,
        // then each draws its own viewport.
        Camera {
            order: -1,
            ..default()
        },
        target.clone(),
        rig.projection(),
        rig.transform(),
        rig.clone(),
        *msaa,
        Tonemapping::None,
        ShadowFilteringMethod::Hardware2x2,
        RenderLayers::from_layers(&[SHARED_LAYER, LAYER_B]),
    ));
}

/// The two panes' viewports in the 3D view's `region` (physical pixels,
/// from `left` across `size`): A's on the left, B's on the right, each half
/// of it (A's takes the odd pixel).
pub fn pane_viewports(left: u32, size: UVec2) -> Option<(Viewport, Viewport)> {
    let width = size.x.checked_sub(left)?;
    if width < 32 || size.y < 16 {
        return None;
    }
    let b = width / 2;
    let a = width - b;
    let pane = |x: u32, w: u32| Viewport {
        physical_position: UVec2::new(x, 0),
        physical_size: UVec2::new(w, size.y),
        ..default()
    };
    Some((pane(left, a), pane(left + a, b)))
}

/// One run's label: its name and its stepper, contact solver and h.
fn run_label(ui: &mut egui::Ui, name: &str, params: &crate::params::Params, color: egui::Color32) {
    ui.horizontal(|ui| {
        ui.label(egui::RichText::new(name).size(24.0).strong().color(color));
        ui.label(
            egui::RichText::new(format!(
                "{} · {} · h {:.1e} s",
                params.stepper.name(),
                params.solver.name(),
                params.dt
            ))
            .color(color),
        );
    });
}

/// The labels of the two runs: in the split view "A" and "B" at the top of
/// each pane, with each run's stepper and solver, and a line between the
/// panes; in the ghost view both at the top left, "A (solid)" over "B
/// (ghost)". Sized by the egui view, so that a recording (drawn into an
/// image, no window) carries them as the window does.
fn pane_labels(
    mut contexts: EguiContexts,
    compare: Option<Res<Compare>>,
    sim: Res<super::Sim>,
    layout: Res<PanelLayout>,
    pane_b: Query<&Camera, With<PaneB>>,
) {
    let Some(compare) = compare else {
        return;
    };
    let Ok(ctx) = contexts.ctx_mut() else {
        return;
    };
    let screen = ctx.viewport_rect();
    let left = if layout.visible { layout.width } else { 0.0 };
    let ghost = super::compare_panel::ghost_color();
    let backing = || {
        egui::Frame::new()
            .fill(egui::Color32::from_black_alpha(170))
            .corner_radius(4.0)
            .inner_margin(egui::Margin::symmetric(8, 2))
    };
    if !is_split(Some(&compare)) {
        egui::Area::new(egui::Id::new("pane label"))
            .fixed_pos(egui::pos2(left + 10.0, 8.0))
            .interactable(false)
            .fade_in(false)
            .show(ctx, |ui| {
                backing().show(ui, |ui| {
                    run_label(ui, "A (solid)", &sim.params, egui::Color32::WHITE);
                    run_label(ui, "B (ghost)", &compare.b.params, ghost);
                });
            });
        return;
    }
    // Where B's pane begins: its camera's viewport (in pixels of the
    // target, a window or a recording's image), in egui's points.
    let Some(middle) = pane_b
        .iter()
        .find_map(|camera| camera.viewport.as_ref())
        .map(|v| v.physical_position.x as f32 / ctx.pixels_per_point())
    else {
        return;
    };
    let runs = [
        ("A", &sim.params, egui::Color32::WHITE, left),
        ("B", &compare.b.params, ghost, middle),
    ];
    for (name, params, color, x) in runs {
        egui::Area::new(egui::Id::new(("pane label", name)))
            .fixed_pos(egui::pos2(x + 10.0, 8.0))
            .interactable(false)
            .fade_in(false)
            .show(ctx, |ui| {
                backing().show(ui, |ui| run_label(ui, name, params, color));
            });
    }
    ctx.layer_painter(egui::LayerId::new(
        egui::Order::Background,
        egui::Id::new("pane divider"),
    ))
    .vline(
        middle,
        screen.top()..=screen.bottom(),
        egui::Stroke::new(2.0, egui::Color32::from_gray(90)),
    );
}
