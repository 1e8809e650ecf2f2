//! The history under the view: a timeline slider over the checkpoints of
//! the last 60 s (within a memory cap, shown), ← / → to step through them
//! while paused; resuming from a past step forks (the later steps are
//! discarded and the simulation continues with the current parameters).
//! A comparison's run B follows A through the history ([`Compare::follow`]).
//! And the panel's files: "Save state" (a RON snapshot in `states/`), "Load
//! state", "Save scene as".

use super::compare::Compare;
use super::panel::PanelLayout;
use super::sim::{History, PreviousState, Sim, SimControl};
use super::{SceneSource, reload::PendingLoad};
use crate::sim::snapshot;
use bevy::prelude::*;
use bevy_egui::{EguiContexts, egui};
use std::path::{Path, PathBuf};

/// Where "Save state" writes, relative to the working directory.
pub const STATE_DIR: &str = "states";

/// The panel's file actions: their last result and the "save scene as" name.
#[derive(Resource, Debug, Clone, Default)]
pub struct FileActions {
    /// What the last action did (or why it failed): (text, is an error).
    pub message: Option<(String, bool)>,
    /// The path typed for "save scene as".
    pub scene_path: String,
    /// The snapshots found in [`STATE_DIR`] (refreshed when the list opens).
    pub snapshots: Vec<PathBuf>,
}

/// The timeline bar and the history keys.
pub struct TimelinePlugin;

impl Plugin for TimelinePlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<FileActions>()
            .add_systems(Update, history_keys);
    }
}

/// ← / → step back / forward through the history (pausing).
fn history_keys(
    keys: Res<ButtonInput<KeyCode>>,
    layout: Res<PanelLayout>,
    mut sim: ResMut<Sim>,
    mut history: ResMut<History>,
    mut previous: ResMut<PreviousState>,
    mut control: ResMut<SimControl>,
    mut compare: Option<ResMut<Compare>>,
) {
    if layout.text_editing {
        return;
    }
    let back = keys.just_pressed(KeyCode::ArrowLeft);
    let forward = keys.just_pressed(KeyCode::ArrowRight);
    if !(back || forward) {
        return;
    }
    control.paused = true;
    let Some(at) = history.timeline.position() else {
        return;
    };
    let to = if back {
        at.saturating_sub(1)
    } else {
        (at + 1).min(history.timeline.len().saturating_sub(1))
    };
    if to != at {
        scrub(
            to,
            &mut sim,
            &mut history,
            &mut previous,
            compare.as_deref_mut(),
        );
    }
}

/// Scrubs the history to checkpoint `index`: A is restored from it, and a
/// comparison's run B goes to its own checkpoint at A's time
/// ([`Compare::follow`]). Returns whether A moved there.
pub fn scrub(
    index: usize,
    sim: &mut Sim,
    history: &mut History,
    previous: &mut PreviousState,
    compare: Option<&mut Compare>,
) -> bool {
    let moved = history.scrub(index, sim, previous);
    if moved && let Some(compare) = compare {
        compare.follow(sim);
    }
    moved
}

fn megabytes(bytes: usize) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

/// The slider under the 3D view.
pub fn timeline_ui(
    mut contexts: EguiContexts,
    layout: Res<PanelLayout>,
    mut sim: ResMut<Sim>,
    mut history: ResMut<History>,
    mut previous: ResMut<PreviousState>,
    mut control: ResMut<SimControl>,
    mut compare: Option<ResMut<Compare>>,
) {
    if !layout.visible {
        return;
    }
    let Ok(ctx) = contexts.ctx_mut() else {
        return;
    };
    let ctx = ctx.clone();
    let screen = ctx.viewport_rect();
    let left = layout.width + 12.0;
    let width = (screen.width() - left - 12.0).max(120.0);
    egui::Area::new(egui::Id::new("timeline"))
        .fixed_pos(egui::pos2(left, screen.bottom() - 64.0))
        .show(&ctx, |ui| {
            egui::Frame::popup(ui.style()).show(ui, |ui| {
                ui.set_width(width - 16.0);
                let (Some(at), Some((t0, t1))) =
                    (history.timeline.position(), history.timeline.time_range())
                else {
                    return;
                };
                let last = history.timeline.len().saturating_sub(1);
                let mut index = at;
                ui.horizontal(|ui| {
                    ui.spacing_mut().slider_width = (width - 360.0).max(60.0);
                    let back = ui.button("◀").on_hover_text("one step back (←)").clicked();
                    let response = ui.add(
                        egui::Slider::new(&mut index, 0..=last.max(1))
                            .show_value(false)
                            .trailing_fill(true),
                    );
                    let forward = ui.button("▶").on_hover_text("one step forward (→)").clicked();
                    if back {
                        index = at.saturating_sub(1);
                    }
                    if forward {
                        index = (at + 1).min(last);
                    }
                    let t = history
                        .timeline
                        .get(index.min(last))
                        .map_or(sim.state.t, |c| c.t());
                    ui.monospace(format!("t = {t:.4} s"));
                    let changed = response.changed() || back || forward;
                    if changed && index.min(last) != at {
                        control.paused = true;
                        scrub(
                            index.min(last),
                            &mut sim,
                            &mut history,
                            &mut previous,
                            compare.as_deref_mut(),
                        );
                    } else if response.drag_started() {
                        control.paused = true;
                    }
                });
                let timeline = &history.timeline;
                let scrubbing = timeline.scrubbing();
                let per_step = timeline.bytes() / timeline.len().max(1);
                ui.horizontal(|ui| {
                    ui.label(
                        egui::RichText::new(format!(
                            "history {t0:.2}–{t1:.2} s · {} steps · {} of {} · {:.1} kB/step",
                            timeline.len(),
                            megabytes(timeline.bytes()),
                            megabytes(timeline.cap),
                            per_step as f64 / 1e3,
                        ))
                        .small()
                        .weak(),
                    )
                    .on_hover_text(format!(
                        "A checkpoint per step (state, contacts, the steppers' warm starts) over the last {} s of simulated time, the oldest dropped beyond the memory cap",
                        timeline.span
                    ));
                    if scrubbing {
                        ui.label(
                            egui::RichText::new("▶ resume forks here: later steps are discarded")
                                .small()
                                .color(egui::Color32::from_rgb(240, 200, 80)),
                        );
                    }
                });
            });
        });
}

/// "Save state", "Load state", "Save scene as".
pub fn files_section(
    ui: &mut egui::Ui,
    sim: &mut Sim,
    history: &mut History,
    (previous, compare): (&mut PreviousState, Option<&mut Compare>),
    source: &SceneSource,
    pending: &mut PendingLoad,
    files: &mut FileActions,
) {
    egui::CollapsingHeader::new("State and scene files")
        .default_open(false)
        .show(ui, |ui| {
            ui.horizontal(|ui| {
                if ui
                    .button("Save state")
                    .on_hover_text(format!(
                        "A RON snapshot in {STATE_DIR}/: state, added bodies, the steppers' memory; `contactlab run SCENE --state FILE` continues it bit for bit"
                    ))
                    .clicked()
                {
                    let path = Path::new(STATE_DIR).join(format!(
                        "{}-{}.ron",
                        stem(&source.path),
                        super::record::button::timestamp()
                    ));
                    files.message = Some(match sim.save_snapshot(&path) {
                        Ok(()) => (format!("state saved to {}", path.display()), false),
                        Err(e) => (e, true),
                    });
                }
                let combo = egui::ComboBox::from_id_salt("load state")
                    .selected_text("Load state…")
                    .width(160.0)
                    .show_ui(ui, |ui| {
                        if files.snapshots.is_empty() {
                            ui.label(format!("no snapshots in {STATE_DIR}/"));
                        }
                        let mut chosen = None;
                        for path in &files.snapshots {
                            if ui.selectable_label(false, file_name(path)).clicked() {
                                chosen = Some(path.clone());
                            }
                        }
                        chosen
                    });
                if combo.response.clicked() {
                    files.snapshots = snapshot_files(Path::new(STATE_DIR));
                }
                if let Some(Some(path)) = combo.inner {
                    let mut next = sim.0.clone();
                    files.message = Some(match snapshot::load_into(&mut next, &path) {
                        Ok(note) => {
                            sim.0 = next;
                            previous.q.clone_from(&sim.state.q);
                            history.restart(sim);
                            if let Some(compare) = compare {
                                compare.restart_from(sim);
                            }
                            let started = format!("started from {}", path.display());
                            (note.unwrap_or(started), false)
                        }
                        Err(e) => (e.to_string(), true),
                    });
                }
            });
            if files.scene_path.is_empty() {
                files.scene_path = source
                    .path
                    .with_file_name(format!("{}-saved.ron", stem(&source.path)))
                    .display()
                    .to_string();
            }
            ui.horizontal(|ui| {
                let save = ui
                    .button("Save scene as")
                    .on_hover_text("A scene file with the current bodies (thrown ones too) and their state as the initial state, and the current parameters")
                    .clicked();
                ui.add(egui::TextEdit::singleline(&mut files.scene_path).desired_width(180.0));
                if save {
                    let path = PathBuf::from(files.scene_path.trim());
                    files.message = Some(
                        match crate::scene::write::save(&sim.scene, &sim.state, &sim.params, &path) {
                            Ok(()) => (format!("scene saved to {}", path.display()), false),
                            Err(e) => (e, true),
                        },
                    );
                }
            });
            if let Some((message, error)) = &files.message {
                let color = if *error {
                    egui::Color32::from_rgb(255, 90, 80)
                } else {
                    egui::Color32::from_rgb(140, 200, 140)
                };
                ui.colored_label(color, message);
                if !error && message.starts_with("scene saved to ") {
                    let path = PathBuf::from(message.trim_start_matches("scene saved to "));
                    if ui.button("open it").clicked() {
                        pending.0 = Some(path);
                    }
                }
            }
        });
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .map_or_else(|| "scene".to_owned(), |s| s.to_string_lossy().into_owned())
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// The `.ron` files in `dir`, newest name last.
fn snapshot_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "ron"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}
