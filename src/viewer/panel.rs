//! The egui side panel (parameters, playback, scene picker, overlays, status,
//! help, and the plots of [`super::plots`]) and the keyboard shortcuts.

use super::SceneSource;
use super::compare::Compare;
use super::frame_rate::FrameRate;
use super::overlay::{OverlayOptions, SEPARATING, SLIP, STICK, drawn_stride};
use super::reload::PendingLoad;
use super::sim::{self, History, PreviousState, SPEED_RANGE, Sim, SimControl};
use super::worker::StepJob;
use crate::model::{LinearSystem, Model, State};
use crate::params::{FrictionCone, Params, SolverKind, StepperKind};
use bevy::prelude::*;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};
use std::path::{Path, PathBuf};

/// Where the panel is, for the 3D viewport.
#[derive(Resource, Debug, Clone, PartialEq)]
pub struct PanelLayout {
    /// Shown (F1 toggles).
    pub visible: bool,
    /// Width in logical pixels (0 until first drawn).
    pub width: f32,
    /// A text field has the keyboard: shortcuts are off.
    pub text_editing: bool,
    /// What the panel shows below the playback controls.
    pub tab: PanelTab,
}

/// The panel's two pages: the controls, or the plots (reachable without
/// scrolling).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PanelTab {
    /// Hands, inspector, parameters, overlays, recording, files, help.
    #[default]
    Controls,
    /// The live plots.
    Plots,
}

impl Default for PanelLayout {
    fn default() -> Self {
        Self {
            visible: true,
            width: 0.0,
            text_editing: false,
            tab: PanelTab::Controls,
        }
    }
}

/// The panel, its plots and the keyboard.
pub struct PanelPlugin;

impl Plugin for PanelPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<PanelLayout>()
            .add_systems(
                EguiPrimaryContextPass,
                (panel_ui, super::timeline::timeline_ui).chain(),
            )
            .add_systems(Update, keyboard_shortcuts);
    }
}

/// Space pause/resume, `.` single step, R reset, F1 panel.
fn keyboard_shortcuts(
    keys: Res<ButtonInput<KeyCode>>,
    mut layout: ResMut<PanelLayout>,
    mut sim: ResMut<Sim>,
    mut control: ResMut<SimControl>,
    mut previous: ResMut<PreviousState>,
    mut history: ResMut<History>,
    mut compare: Option<ResMut<Compare>>,
) {
    if layout.text_editing {
        return;
    }
    if keys.just_pressed(KeyCode::Space) {
        toggle_pause(&mut control);
    }
    if keys.just_pressed(KeyCode::Period) || keys.just_pressed(KeyCode::NumpadDecimal) {
        control.step_once = true;
    }
    if keys.just_pressed(KeyCode::KeyR) {
        sim::reset(
            &mut sim,
            &mut previous,
            &mut control,
            &mut history,
            compare.as_deref_mut(),
        );
    }
    if keys.just_pressed(KeyCode::F1) {
        layout.visible = !layout.visible;
    }
}

fn toggle_pause(control: &mut SimControl) {
    control.paused = !control.paused;
    if !control.paused {
        // Resuming retries the failed step; its report will say again if it fails.
        control.halt = None;
    }
}

/// The `.ron` files next to the current scene, sorted.
fn scene_files(current: &Path) -> Vec<PathBuf> {
    let dir = match current.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
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

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

const RED: egui::Color32 = egui::Color32::from_rgb(255, 90, 80);

fn to_egui(color: Color) -> egui::Color32 {
    let c = color.to_srgba();
    egui::Color32::from_rgb(
        (c.red * 255.0) as u8,
        (c.green * 255.0) as u8,
        (c.blue * 255.0) as u8,
    )
}

#[derive(Default)]
struct SceneList {
    files: Vec<PathBuf>,
    for_path: Option<PathBuf>,
    age: u32,
}

/// The side panel.
#[allow(clippy::too_many_arguments)]
fn panel_ui(
    mut commands: Commands,
    mut contexts: EguiContexts,
    mut sim: ResMut<Sim>,
    mut control: ResMut<SimControl>,
    mut previous: ResMut<PreviousState>,
    mut history: ResMut<History>,
    mut overlay: ResMut<OverlayOptions>,
    mut backdrop: ResMut<super::visuals::Backdrop>,
    mut layout: ResMut<PanelLayout>,
    mut source: ResMut<SceneSource>,
    mut pending: ResMut<PendingLoad>,
    mut list: Local<SceneList>,
    (mut record, recording): (
        Option<ResMut<super::record::RecordSettings>>,
        Option<Res<super::record::Recording>>,
    ),
    mut hands_ui: super::inspector::HandsUi,
    (frame_rate, mut job, mut compare): (
        Option<Res<FrameRate>>,
        ResMut<StepJob>,
        Option<ResMut<Compare>>,
    ),
) {
    let Ok(ctx) = contexts.ctx_mut() else {
        return;
    };
    let ctx = ctx.clone();
    layout.text_editing = ctx.text_edit_focused();
    if !layout.text_editing {
        // Space and `.` belong to the simulation, not to the focused button.
        ctx.input_mut(|input| {
            input.events.retain(|e| {
                !matches!(
                    e,
                    egui::Event::Key {
                        key: egui::Key::Space | egui::Key::Period,
                        ..
                    }
                )
            });
        });
    }

    let mut root = egui::Ui::new(
        ctx.clone(),
        "viewport".into(),
        egui::UiBuilder::new()
            .layer_id(egui::LayerId::background())
            .max_rect(ctx.viewport_rect()),
    );
    if !layout.visible {
        layout.width = 0.0;
        if recording.is_some() {
            // Hidden for a recording: nothing of the panel in the frames.
            return;
        }
        egui::Area::new(egui::Id::new("panel hint"))
            .anchor(egui::Align2::LEFT_TOP, egui::vec2(8.0, 8.0))
            .show(&ctx, |ui| {
                ui.label(egui::RichText::new("F1: panel").weak());
            });
        return;
    }

    if list.for_path.as_deref() != Some(source.path.as_path()) || list.age > 300 {
        list.files = scene_files(&source.path);
        list.for_path = Some(source.path.clone());
        list.age = 0;
    }
    list.age += 1;

    let response = egui::Panel::left("contactlab panel")
        .default_size(350.0)
        .min_size(260.0)
        .resizable(true)
        .show(&mut root, |ui| {
            // Both ways: content wider than the panel scrolls instead of
            // widening it (the scene would jump).
            egui::ScrollArea::both()
                .auto_shrink([false, false])
                .show(ui, |ui| {
                    ui.add_space(4.0);
                    let heading = ui.heading(&sim.scene.name);
                    if !sim.scene.description.is_empty() {
                        heading.on_hover_text(&sim.scene.description);
                    }
                    ui.separator();
                    status(ui, &sim, &control, frame_rate.as_deref());
                    running_step(ui, &mut control, &mut job);
                    ui.separator();
                    playback(
                        ui,
                        &mut sim,
                        &mut control,
                        (&mut previous, &mut history, compare.as_deref_mut()),
                        &source,
                        &mut pending,
                    );
                    scene_picker(ui, &mut source, &list.files, &mut pending);
                    if let Model::Linear(system) = sim.model() {
                        coordinates(ui, system, &sim.state);
                    }
                    ui.separator();
                    ui.horizontal(|ui| {
                        ui.selectable_value(&mut layout.tab, PanelTab::Controls, "Controls");
                        ui.selectable_value(&mut layout.tab, PanelTab::Plots, "Plots")
                            .on_hover_text("Energy, contacts, LCP size, pivots and step time over the last 10 s");
                    });
                    ui.separator();
                    if layout.tab == PanelTab::Plots {
                        let marker = history.timeline.scrubbing().then_some(sim.state.t);
                        let nsgs = sim.params.solver == SolverKind::Nsgs;
                        super::plots::plots(ui, &history, compare.as_deref(), marker, nsgs);
                        return;
                    }
                    if let Some(compare) = compare.as_deref_mut() {
                        if super::compare_panel::compare_section(ui, &sim, compare) {
                            commands.remove_resource::<Compare>();
                        }
                        ui.separator();
                    } else if super::compare_panel::start_toggle(ui) {
                        commands.insert_resource(Compare::of_run(&sim));
                    }
                    if let (Some(hands), Some(selection), Some(follow)) = (
                        hands_ui.hands.as_deref_mut(),
                        hands_ui.selection.as_deref_mut(),
                        hands_ui.follow.as_deref_mut(),
                    ) {
                        super::inspector::hands_section(ui, &sim, hands, follow, selection);
                        super::inspector::inspector_section(
                            ui,
                            &sim,
                            compare.as_deref().map(|c| &c.b),
                            selection,
                        );
                        ui.separator();
                    }
                    parameters(ui, &mut sim);
                    ui.separator();
                    let contacts = sim.last.as_ref().map_or(0, |r| r.contacts.len());
                    overlays(ui, &mut overlay, contacts);
                    let mut light = backdrop.light;
                    if ui
                        .checkbox(&mut light, "light background")
                        .on_hover_text("For slides and print; bodies keep their colours")
                        .changed()
                    {
                        backdrop.light = light;
                    }
                    ui.separator();
                    if let Some(record) = record.as_deref_mut() {
                        super::record::record_section(ui, record, recording.as_deref());
                        ui.separator();
                    }
                    if let Some(files) = hands_ui.files.as_deref_mut() {
                        super::timeline::files_section(
                            ui,
                            &mut sim,
                            &mut history,
                            (&mut previous, compare.as_deref_mut()),
                            &source,
                            &mut pending,
                            files,
                        );
                        ui.separator();
                    }
                    help(ui, sim.model().is_planar());
                });
        });
    layout.width = response.response.rect.width();
    if matches!(sim.model(), Model::Linear(_)) && sim.scene.drawing.is_empty() {
        egui::Area::new(egui::Id::new("no bodies"))
            .anchor(egui::Align2::CENTER_CENTER, egui::vec2(layout.width / 2.0, 0.0))
            .show(&ctx, |ui| {
                ui.label(
                    egui::RichText::new(
                        "A generalized linear system has no bodies to draw:\nits coordinates and plots are in the panel.",
                    )
                    .weak(),
                );
            });
    }
}

fn status(ui: &mut egui::Ui, sim: &Sim, control: &SimControl, frame_rate: Option<&FrameRate>) {
    let rtf = control
        .real_time_factor
        .map_or_else(|| "–".to_owned(), |f| format!("{f:.2}×"));
    let lcp = sim.last.as_ref().map_or("–", |r| r.status.name());
    let frame = frame_rate
        .and_then(|r| r.mean_frame_time(30, 0))
        .filter(|&f| f > 0.0)
        .map_or_else(
            || "–".to_owned(),
            |f| format!("{:.1} ms ({:.0} fps)", f * 1e3, 1.0 / f),
        );
    ui.monospace(format!(
        "t = {:.4} s   steps {}\nreal-time factor {rtf}   LCP {lcp}\nframe {frame}",
        sim.state.t, sim.steps,
    ))
    .on_hover_text("Wall-clock time per frame over the last 30 frames: drawing, panel and the steps taken in the frame");
    if control.paused && control.end_passed && sim::at_duration(sim) {
        ui.colored_label(
            egui::Color32::from_rgb(240, 200, 80),
            format!(
                "paused at the scene's duration, {} s: Space runs on, \"loop\" starts it again",
                sim.params.duration
            ),
        );
    } else if control.paused {
        ui.colored_label(egui::Color32::from_rgb(240, 200, 80), "paused");
    }
    if let Some(report) = &sim.last
        && !report.status.advances()
        && control.halt.is_none()
    {
        let reason = sim
            .failure_message()
            .unwrap_or_else(|| format!("{}: {}", report.status.name(), report.status.reason()));
        ui.colored_label(RED, reason);
    }
    if let Some(halt) = &control.halt {
        ui.colored_label(RED, format!("stopped: {halt}"));
    }
    if let Some(error) = &control.step_error {
        ui.colored_label(RED, format!("step refused: {error}"));
    }
}

/// A step that has run longer than a frame: its index, seconds and Lemke
/// pivots so far, with Cancel (the step is dropped, the shown state stays
/// as it was).
fn running_step(ui: &mut egui::Ui, control: &mut SimControl, job: &mut StepJob) {
    let Some(progress) = job.progress() else {
        return;
    };
    if progress.seconds < RUNNING_NOTICE {
        return;
    }
    let pivots = if progress.pivots > 0 {
        format!(", {} Lemke pivots", progress.pivots)
    } else {
        String::new()
    };
    ui.colored_label(
        egui::Color32::from_rgb(240, 200, 80),
        format!(
            "computing step {}: {:.1} s{pivots}",
            progress.step, progress.seconds
        ),
    );
    // Pause is the playback row's, just below: the step finishes and no
    // other starts.
    if ui
        .button("✖ Cancel step")
        .on_hover_text("Drop this step and pause at the last finished state")
        .clicked()
    {
        job.cancel();
        control.paused = true;
    }
}

/// Seconds a step runs before the panel shows it.
const RUNNING_NOTICE: f64 = 0.1;

/// A linear system has no bodies to draw: its coordinates as numbers.
fn coordinates(ui: &mut egui::Ui, system: &LinearSystem, state: &State) {
    ui.separator();
    ui.label(egui::RichText::new("Generalized linear system: its coordinates").weak());
    egui::Grid::new("coordinates")
        .num_columns(3)
        .show(ui, |ui| {
            ui.strong("coordinate");
            ui.strong("q");
            ui.strong("v");
            ui.end_row();
            for (i, name) in system.coordinates.iter().enumerate() {
                ui.monospace(name);
                ui.monospace(format!(
                    "{:+.5}",
                    state.q.get(i).copied().unwrap_or(f64::NAN)
                ));
                ui.monospace(format!(
                    "{:+.5}",
                    state.v.get(i).copied().unwrap_or(f64::NAN)
                ));
                ui.end_row();
            }
        });
}

fn playback(
    ui: &mut egui::Ui,
    sim: &mut Sim,
    control: &mut SimControl,
    (previous, history, compare): (&mut PreviousState, &mut History, Option<&mut Compare>),
    source: &SceneSource,
    pending: &mut PendingLoad,
) {
    ui.horizontal(|ui| {
        let label = if control.paused {
            "▶ Resume"
        } else {
            "⏸ Pause"
        };
        if ui.button(label).on_hover_text("Space").clicked() {
            toggle_pause(control);
        }
        if ui.button("Step").on_hover_text(". (period)").clicked() {
            control.step_once = true;
        }
        if ui.button("Reset").on_hover_text("R").clicked() {
            sim::reset(sim, previous, control, history, compare);
        }
        if ui
            .button("⟳ Reload")
            .on_hover_text(
                "Read the scene file again: its own parameters, plus the command line's overrides",
            )
            .clicked()
        {
            pending.0 = Some(source.path.clone());
        }
    });
    ui.checkbox(&mut control.looping, "loop")
        .on_hover_text(format!(
            "At the scene's duration ({} s) start again instead of pausing",
            sim.params.duration
        ));
    let (lo, hi) = SPEED_RANGE;
    ui.add(
        egui::Slider::new(&mut control.speed, lo..=hi)
            .logarithmic(true)
            .smallest_positive(lo)
            .text("playback speed")
            .custom_formatter(|v, _| format!("{v:.2}×")),
    )
    .on_hover_text("Simulated seconds per wall-clock second requested");
}

fn scene_picker(
    ui: &mut egui::Ui,
    source: &mut SceneSource,
    files: &[PathBuf],
    pending: &mut PendingLoad,
) {
    ui.horizontal(|ui| {
        let current = file_name(&source.path);
        ui.label("scene");
        egui::ComboBox::from_id_salt("scene picker")
            .selected_text(&current)
            .width(200.0)
            .show_ui(ui, |ui| {
                for file in files {
                    let name = file_name(file);
                    if ui.selectable_label(name == current, &name).clicked() {
                        pending.0 = Some(file.clone());
                    }
                }
            });
    });
    ui.horizontal(|ui| {
        ui.checkbox(&mut source.watch, "reload on save")
            .on_hover_text("Reload the scene when its file changes on disk");
        ui.checkbox(&mut source.keep_parameters, "keep panel parameters")
            .on_hover_text(
                "On reload keep μ, h, k, … as set here instead of the file's own values",
            );
    });
    if let Some(error) = &source.error {
        ui.colored_label(
            RED,
            format!("not loaded (the last good scene keeps running):\n{error}"),
        );
    }
}

fn parameters(ui: &mut egui::Ui, sim: &mut Sim) {
    let planar = sim.model().is_planar();
    let linear = matches!(sim.model(), Model::Linear(_));
    let stepper = sim.params.stepper;
    let uses_damping = sim.model().uses_damping();
    let uses_stiffness = sim.model().uses_stiffness();
    let joints = sim.model().has_joints();
    egui::CollapsingHeader::new("Parameters")
        .default_open(true)
        .show(ui, |ui| {
            let params = &mut sim.params;
            ui.add(egui::Slider::new(&mut params.mu, 0.0..=2.0).text("friction μ"));
            step_size(ui, params);
            if planar {
                let mut two = 2usize;
                ui.add_enabled(
                    false,
                    egui::Slider::new(&mut two, 2..=64).text("edges k: fixed at 2 (planar)"),
                )
                .on_disabled_hover_text("Planar contacts always use the pair ±t");
            } else {
                ui.add(egui::Slider::new(&mut params.edges, 3..=64).text("friction edges k"));
            }
            ui.add(egui::Slider::new(&mut params.ncp_iterations, 1..=10).text("NCP iterations"))
                .on_hover_text("Fixed-point iterations of the nonlinear scheme (§3.6); 1 = linearized");
            ui.add_enabled(
                stepper.uses_restitution(),
                egui::Slider::new(&mut params.restitution, 0.0..=1.0).text("restitution e"),
            )
            .on_hover_text(
                "Newton's ε_N of every contact whose scene file does not set its own (ε_T stays as set)",
            )
            .on_disabled_hover_text(format!(
                "The {stepper} stepper is inelastic by construction: it has no restitution coefficient"
            ));
            ui.add_enabled(
                uses_damping,
                egui::Slider::new(&mut params.damping, 0.0..=1e9)
                    .logarithmic(true)
                    .smallest_positive(1e-2)
                    .text("damping δ (N·s/m)")
                    .custom_formatter(|v, _| format!("{v:.3e}")),
            )
            .on_hover_text("Every damper without its own coefficient in the scene file")
            .on_disabled_hover_text(if linear {
                "A linear system's damping matrix C comes from its scene file; no damper uses this coefficient"
            } else {
                "This scene has no dampers that take the scene-wide coefficient"
            });
            ui.add_enabled(
                uses_stiffness,
                egui::Slider::new(&mut params.stiffness, 0.0..=1e9)
                    .logarithmic(true)
                    .smallest_positive(1e-2)
                    .text("stiffness γ (N/m)")
                    .custom_formatter(|v, _| format!("{v:.3e}")),
            )
            .on_hover_text("Every spring without its own stiffness in the scene file")
            .on_disabled_hover_text(if linear {
                "A linear system's stiffness matrix K comes from its scene file; no spring uses this coefficient"
            } else {
                "This scene has no springs that take the scene-wide stiffness"
            });
            stepper_and_solver(ui, params, joints, linear);
        });
}

/// The step size h: A's in "Parameters", B's in "Compare".
pub fn step_size(ui: &mut egui::Ui, params: &mut Params) {
    ui.add(
        egui::Slider::new(&mut params.dt, 1e-5..=0.05)
            .logarithmic(true)
            .smallest_positive(1e-5)
            .text("step size h (s)")
            .custom_formatter(|v, _| format!("{v:.2e}")),
    );
}

/// The stepper, the contact solver and the solver's options, each offered
/// only where the model allows it (`joints`: the scene has joints; `linear`:
/// a generalized linear system): A's in "Parameters", B's in "Compare".
pub fn stepper_and_solver(ui: &mut egui::Ui, params: &mut Params, joints: bool, linear: bool) {
    egui::ComboBox::from_label("stepper")
        .selected_text(params.stepper.name())
        .show_ui(ui, |ui| {
            for kind in StepperKind::ALL {
                if joints && !kind.supports_joints() {
                    ui.add_enabled(false, egui::Button::selectable(false, kind.name()))
                        .on_disabled_hover_text("No joint rows: this scene has joints");
                } else {
                    ui.selectable_value(&mut params.stepper, kind, kind.name());
                }
            }
        });
    // NSGS solves the contact LCP of two of the schemes, on rigid
    // bodies only (Params::validate); elsewhere Lemke is the solver.
    let nsgs_possible = params.stepper.supports_nsgs() && !linear;
    if !nsgs_possible {
        params.solver = SolverKind::Lemke;
    }
    egui::ComboBox::from_label("contact solver")
        .selected_text(params.solver.name())
        .show_ui(ui, |ui| {
            for kind in SolverKind::ALL {
                if kind == SolverKind::Nsgs && !nsgs_possible {
                    ui.add_enabled(false, egui::Button::selectable(false, kind.name()))
                        .on_disabled_hover_text(
                            "NSGS solves the contact LCP of stewart-trinkle and moreau-jean on rigid bodies",
                        );
                } else {
                    ui.selectable_value(&mut params.solver, kind, kind.name());
                }
            }
        })
        .response
        .on_hover_text("lemke: exact pivoting; nsgs: Gauss–Seidel over contacts to a tolerance");
    if params.solver == SolverKind::Lemke && params.friction_cone == Some(FrictionCone::Circular) {
        // Lemke solves the pyramid's LCP (Params::validate).
        params.friction_cone = None;
    }
    if params.solver == SolverKind::Nsgs {
        let mut cone = params.cone();
        egui::ComboBox::from_label("friction cone")
            .selected_text(cone.name())
            .show_ui(ui, |ui| {
                for kind in FrictionCone::ALL {
                    ui.selectable_value(&mut cone, kind, kind.name());
                }
            })
            .response
            .on_hover_text(
                "circular: Coulomb's cone, exact local solves; pyramid: the k-edge LCP Lemke solves (in the plane both are the two-direction law)",
            );
        if cone != params.cone() {
            params.friction_cone = Some(cone);
        }
        ui.add(
            egui::Slider::new(&mut params.tolerance, 1e-12..=1e-2)
                .logarithmic(true)
                .text("NSGS tolerance")
                .custom_formatter(|v, _| format!("{v:.0e}")),
        )
        .on_hover_text("Relative natural-map residual at which the sweeps stop");
        ui.add(
            egui::Slider::new(&mut params.max_iterations, 1..=100_000)
                .logarithmic(true)
                .text("NSGS sweep limit"),
        )
        .on_hover_text("A solve that reaches it goes on with its best iterate (status Unconverged; its residual is plotted)");
    }
}

fn overlays(ui: &mut egui::Ui, overlay: &mut OverlayOptions, contacts: usize) {
    egui::CollapsingHeader::new("Contacts")
        .default_open(true)
        .show(ui, |ui| {
            ui.horizontal(|ui| {
                if overlay.hidden(contacts) {
                    ui.label(format!("{contacts} contacts: not drawn"));
                    if ui.button("draw them").clicked() {
                        overlay.drawn_anyway = true;
                    }
                } else if contacts > overlay.limit {
                    ui.label(format!("{contacts} contacts"));
                    if ui.button("hide them").clicked() {
                        overlay.drawn_anyway = false;
                    }
                }
            });
            ui.add(
                egui::Slider::new(&mut overlay.limit, 0..=10_000)
                    .logarithmic(true)
                    .text("drawn up to"),
            )
            .on_hover_text("Contact overlays are off while a step has more contacts than this");
            let stride = drawn_stride(contacts);
            if stride > 1 && !overlay.hidden(contacts) {
                ui.label(format!(
                    "drawn: every {stride}th contact, {} of {contacts}",
                    contacts.div_ceil(stride)
                ));
            }
            ui.horizontal(|ui| {
                ui.checkbox(&mut overlay.points, "points");
                ui.checkbox(&mut overlay.normals, "normals");
            });
            ui.horizontal(|ui| {
                ui.checkbox(&mut overlay.friction, "friction impulse");
                ui.checkbox(&mut overlay.pyramid, "friction pyramid");
            });
            ui.checkbox(&mut overlay.mechanism, "springs, dampers and joints");
            ui.horizontal(|ui| {
                ui.checkbox(&mut overlay.color_by_state, "colour by state:");
                ui.colored_label(to_egui(STICK), "stick");
                ui.colored_label(to_egui(SLIP), "slip");
                ui.colored_label(to_egui(SEPARATING), "separating");
            });
            ui.add(
                egui::Slider::new(&mut overlay.arrow_scale, 0.05..=20.0)
                    .logarithmic(true)
                    .text("arrow scale"),
            )
            .on_hover_text(
                "Friction arrows show impulse / h; at scale 1 the heaviest body's weight is a quarter of the view",
            );
        });
}

fn help(ui: &mut egui::Ui, planar: bool) {
    egui::CollapsingHeader::new("Help")
        .default_open(false)
        .show(ui, |ui| {
            egui::Grid::new("keys").num_columns(2).show(ui, |ui| {
                let rows: &[(&str, &str)] = &[
                    ("Space", "pause / resume (from a past step: fork)"),
                    (".", "single step (pauses)"),
                    ("← / →", "step back / forward through the history"),
                    ("R", "reset to the initial state"),
                    ("Esc", "clear the selection"),
                    ("F1", "show / hide this panel"),
                ];
                for (key, what) in rows {
                    ui.monospace(*key);
                    ui.label(*what);
                    ui.end_row();
                }
                let mouse: &[(&str, &str)] = if planar {
                    &[
                        ("left click", "select (throw tool: throw)"),
                        ("Ctrl + left drag", "perturb (perturb tool: left drag)"),
                        ("right/middle drag", "pan"),
                        ("wheel", "zoom"),
                    ]
                } else {
                    &[
                        ("left click", "select (throw tool: throw)"),
                        ("Ctrl + left drag", "perturb (perturb tool: left drag)"),
                        ("left drag", "orbit"),
                        ("right/middle drag", "pan"),
                        ("wheel", "zoom"),
                    ]
                };
                for (key, what) in mouse {
                    ui.monospace(*key);
                    ui.label(*what);
                    ui.end_row();
                }
            });
            ui.label(
                egui::RichText::new(
                    "A step whose LCP is not solved pauses the simulation; its status shows in red.",
                )
                .small()
                .weak(),
            );
        });
}
