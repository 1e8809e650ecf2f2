//! Loading scene files while the viewer runs: the Reload button, the scene
//! picker and hot reload (the open file is watched and reloaded when it
//! changes). A file that fails to load leaves the running scene untouched and
//! its error in [`SceneSource::error`] for the panel to show.

use super::SceneSource;
use super::compare::load_scene_or_comparison;
use super::sim;
use crate::sim::Simulation;
use bevy::prelude::*;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// A scene file to load at the next frame (reload, scene picker, file change).
#[derive(Resource, Debug, Clone, Default)]
pub struct PendingLoad(pub Option<PathBuf>);

/// What the watcher last saw of the open scene file: modification time and
/// length, so a save within the clock's resolution that changes the length
/// is still noticed.
#[derive(Resource, Debug, Clone, Default, PartialEq)]
pub struct WatchedFile {
    /// The file watched.
    pub path: Option<PathBuf>,
    /// Its stamp when last loaded (None: missing or unreadable).
    pub stamp: Option<(SystemTime, u64)>,
}

/// Watches the open scene file and loads pending scenes.
pub struct ReloadPlugin;

impl Plugin for ReloadPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<PendingLoad>()
            .init_resource::<WatchedFile>()
            .add_systems(Update, (watch_scene_file, load_pending).chain());
    }
}

fn stamp(path: &Path) -> Option<(SystemTime, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

/// Queues a reload when the open scene file's stamp changes (one `stat` per
/// frame). A file that disappears (an editor's save by rename) is reloaded when
/// it comes back.
fn watch_scene_file(
    source: Res<SceneSource>,
    mut watched: ResMut<WatchedFile>,
    mut pending: ResMut<PendingLoad>,
) {
    if !source.watch {
        return;
    }
    let now = stamp(&source.path);
    if watched.path.as_deref() != Some(source.path.as_path()) {
        // A new file: start watching from its current state.
        watched.path = Some(source.path.clone());
        watched.stamp = now;
        return;
    }
    if now != watched.stamp {
        watched.stamp = now;
        if now.is_some() && pending.0.is_none() {
            pending.0 = Some(source.path.clone());
        }
    }
}

/// Loads the requested scene file, keeping the old one on error.
///
/// With [`SceneSource::keep_parameters`] a reload of the same file keeps the
/// panel's parameters (when they fit the new scene); otherwise the file's own
/// parameters apply, plus the command line's overrides when they fit.
pub fn load_pending(world: &mut World) {
    let Some(path) = world.resource_mut::<PendingLoad>().0.take() else {
        return;
    };
    let source = world.resource::<SceneSource>();
    let same_file = source.path == path;
    let keep = source.keep_parameters && same_file;
    let overrides = source.overrides.clone();
    let loaded = load_scene_or_comparison(&path, &overrides)
        .or_else(|first| load_scene_or_comparison(&path, &Default::default()).map_err(|_| first))
        .map(|(fresh, compare)| {
            if keep {
                let params = world.resource::<sim::Sim>().params.clone();
                (keep_params(fresh, params), compare)
            } else {
                (fresh, compare)
            }
        });
    // The watcher compares against the file as loaded now.
    let now = stamp(&path);
    let mut watched = world.resource_mut::<WatchedFile>();
    watched.path = Some(path.clone());
    watched.stamp = now;
    match loaded {
        Ok((simulation, compare)) => {
            let title = match &compare {
                Some(compare) => format!("contactlab — {} (A against B)", compare.name),
                None => format!("contactlab — {}", simulation.scene.name),
            };
            sim::install(world, simulation, compare);
            let mut source = world.resource_mut::<SceneSource>();
            source.path = path;
            source.error = None;
            let mut windows =
                world.query_filtered::<&mut Window, With<bevy::window::PrimaryWindow>>();
            if let Ok(mut window) = windows.single_mut(world) {
                window.title = title;
            }
        }
        Err(message) => {
            world.resource_mut::<SceneSource>().error = Some(message);
        }
    }
}

/// The reloaded scene with the panel's parameters, unless they do not fit it
/// (then the file's, so a reload never fails because of the panel).
fn keep_params(fresh: Simulation, params: crate::params::Params) -> Simulation {
    if params.validate(&fresh.model().features()).is_ok() {
        let settings = *fresh.step_settings();
        let mut kept = Simulation::with_params(fresh.scene, params);
        *kept.step_settings_mut() = settings;
        kept
    } else {
        fresh
    }
}
