//! Camera follow: the view moves with a body or a drawing part, keeping the
//! framing it had when following began (pan and zoom still work on top).
//! "Follow selected" follows the selection; otherwise the scene's camera hint
//! may name what to follow (`camera: (…, follow: "sleeve")`: the woodpecker's
//! sleeve, which leaves the view after about 1.3 s without it).

use super::camera::{MainCamera, ViewRig};
use super::drawing::PartVisual;
use super::hands::{Selected, Selection};
use super::sim::{BodyVisual, SceneEpoch, Sim, physics_to_world, rigid};
use bevy::prelude::*;

/// What the camera follows (the panel's checkboxes).
#[derive(Resource, Debug, Clone, Copy, PartialEq, Eq)]
pub struct Follow {
    /// Follow the selection when there is one.
    pub selected: bool,
    /// Follow what the scene's camera hint names (when not following the
    /// selection).
    pub scene: bool,
}

impl Default for Follow {
    fn default() -> Self {
        Self {
            selected: false,
            scene: true,
        }
    }
}

/// What is followed now, if anything.
pub fn followed(sim: &Sim, selection: &Selection, follow: &Follow) -> Option<Selected> {
    if follow.selected
        && let Some(selected) = selection.0
    {
        return Some(selected);
    }
    if !follow.scene {
        return None;
    }
    let name = sim.scene.camera.follow.as_deref()?;
    if let Some(i) = rigid(sim).and_then(|s| s.body_index(name)) {
        return Some(Selected::Body(i));
    }
    sim.scene
        .drawing
        .iter()
        .position(|p| p.name == name)
        .map(Selected::Part)
}

/// Where a followed thing is drawn now, in Bevy's world.
fn position_of(
    sim: &Sim,
    target: Selected,
    bodies: &Query<(&BodyVisual, &Transform)>,
    parts: &Query<(&PartVisual, &Transform)>,
) -> Option<Vec3> {
    match target {
        Selected::Body(i) => {
            let dimension = rigid(sim)?.dimension;
            let (_, t) = bodies.iter().find(|(b, _)| b.0 == i)?;
            Some(physics_to_world(dimension) * t.translation)
        }
        Selected::Part(i) => {
            let (_, t) = parts.iter().find(|(p, _)| p.0 == i)?;
            Some(t.translation.truncate().extend(0.0))
        }
    }
}

/// Moves the camera rig by how far the followed thing moved since the last
/// frame.
#[allow(clippy::too_many_arguments)]
pub fn follow_camera(
    sim: Res<Sim>,
    follow: Res<Follow>,
    selection: Res<Selection>,
    epoch: Res<SceneEpoch>,
    bodies: Query<(&BodyVisual, &Transform)>,
    parts: Query<(&PartVisual, &Transform)>,
    mut rig: Single<&mut ViewRig, With<MainCamera>>,
    mut last: Local<Option<(SceneEpoch, Selected, Vec3)>>,
) {
    let Some(target) = followed(&sim, &selection, &follow) else {
        *last = None;
        return;
    };
    let Some(point) = position_of(&sim, target, &bodies, &parts).filter(|p| p.is_finite()) else {
        return;
    };
    if let Some((seen, previous, before)) = *last
        && seen == *epoch
        && previous == target
    {
        let delta = point - before;
        if delta != Vec3::ZERO {
            match &mut **rig {
                ViewRig::Planar { center, .. } => *center += delta.truncate(),
                ViewRig::Orbit { target, .. } => *target += delta,
            }
        }
    }
    *last = Some((*epoch, target, point));
}
