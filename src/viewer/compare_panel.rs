//! The panel's compare toggle (a run B beside A on any scene) and its
//! "Compare" section: the comparison's name, the view (ghost or
//! side by side), A's and B's key
//! parameters side by side (B's μ, restitution and k edited live, as the
//! "Parameters" section edits A's; B's stepper, contact solver and h with
//! the "Parameters" section's own controls, restarting B from A's state:
//! [`Compare::edit_b`]), the divergence, and B's failures named as B's.

use super::body_meshes::GHOST;
use super::compare::Compare;
use super::panel::{step_size, stepper_and_solver};
use super::sim::Sim;
use crate::model::Model;
use crate::params::Params;
use crate::scene::comparison::CompareView;
use bevy_egui::egui;

const RED: egui::Color32 = egui::Color32::from_rgb(255, 110, 90);

/// The ghost's tint as egui draws it, for B's label.
pub fn ghost_color() -> egui::Color32 {
    let c = GHOST.to_srgba();
    let byte = |x: f32| (x.clamp(0.0, 1.0) * 255.0).round() as u8;
    egui::Color32::from_rgb(byte(c.red), byte(c.green), byte(c.blue))
}

/// The compare toggle on a scene without a run B: whether it was switched
/// on (a run B to start beside A, [`Compare::of_run`]).
pub fn start_toggle(ui: &mut egui::Ui) -> bool {
    let mut on = false;
    ui.checkbox(&mut on, "compare: run B beside A")
        .on_hover_text(
            "A second run of the scene, started from A's current state, drawn as a ghost or side by side; edit its stepper, solver and parameters in the Compare section",
        )
        .changed()
        && on
}

/// The "Compare" section. Returns whether the compare toggle was switched
/// off (run B to be dropped).
pub fn compare_section(ui: &mut egui::Ui, sim: &Sim, compare: &mut Compare) -> bool {
    let mut on = true;
    ui.checkbox(&mut on, "compare: run B beside A")
        .on_hover_text("Off drops run B; A runs on");
    if !on {
        return true;
    }
    egui::CollapsingHeader::new("Compare")
        .default_open(true)
        .show(ui, |ui| {
            let name = ui.strong(&compare.name);
            if !compare.description.is_empty() {
                name.on_hover_text(&compare.description);
            }
            ui.horizontal(|ui| {
                ui.label("view");
                ui.selectable_value(&mut compare.view, CompareView::Ghost, "ghost")
                    .on_hover_text("B drawn as a translucent ghost over A");
                ui.selectable_value(&mut compare.view, CompareView::Split, "side by side")
                    .on_hover_text("A on the left, B on the right; orbit, pan and zoom move both");
            });
            let planar = sim.model().is_planar();
            egui::Grid::new("compare parameters")
                .num_columns(3)
                .striped(true)
                .show(ui, |ui| {
                    ui.label("");
                    let (a, b) = match compare.view {
                        CompareView::Ghost => ("A (solid)", "B (ghost)"),
                        CompareView::Split => ("A (left)", "B (right)"),
                    };
                    ui.strong(a);
                    ui.colored_label(ghost_color(), b);
                    ui.end_row();
                    read_only_rows(ui, &sim.params, &compare.b.params);
                    editable_rows(ui, &sim.params, &mut compare.b.params, planar);
                    ui.label("steps");
                    ui.monospace(sim.steps.to_string());
                    ui.monospace(compare.b.steps.to_string());
                    ui.end_row();
                });
            let model = sim.model();
            let (joints, linear) = (model.has_joints(), matches!(model, Model::Linear(_)));
            egui::CollapsingHeader::new("B's stepper, solver and h")
                .default_open(false)
                .show(ui, |ui| {
                    ui.label(
                        egui::RichText::new(
                            "A change restarts B from A's current state: from there the divergence is the settings' alone",
                        )
                        .small()
                        .weak(),
                    );
                    compare.edit_b(sim, |params| {
                        step_size(ui, params);
                        stepper_and_solver(ui, params, joints, linear);
                    });
                });
            let divergence = compare
                .divergence_from(sim)
                .map_or_else(|| "–".to_owned(), |d| format!("{d:.3e} m"));
            ui.monospace(format!("divergence {divergence}")).on_hover_text(
                "The largest distance between a body in A and the same body in B (as `contactlab compare`)",
            );
            if let Some(halt) = &compare.halt {
                ui.colored_label(RED, format!("B stopped (A runs on; Reset restarts both): {halt}"));
            }
            if let Some(error) = &compare.step_error {
                ui.colored_label(RED, format!("B's step refused: {error}"));
            }
        });
    false
}

fn read_only_rows(ui: &mut egui::Ui, a: &Params, b: &Params) {
    ui.label("stepper");
    ui.label(a.stepper.name());
    ui.label(b.stepper.name());
    ui.end_row();
    ui.label("solver");
    ui.label(a.solver.name());
    ui.label(b.solver.name());
    ui.end_row();
    ui.label("step size h (s)");
    ui.monospace(format!("{:.2e}", a.dt));
    ui.monospace(format!("{:.2e}", b.dt));
    ui.end_row();
}

/// μ, restitution and k: A's shown, B's edited.
fn editable_rows(ui: &mut egui::Ui, a: &Params, b: &mut Params, planar: bool) {
    ui.label("friction μ");
    ui.monospace(format!("{:.3}", a.mu));
    ui.add(egui::DragValue::new(&mut b.mu).range(0.0..=2.0).speed(0.01));
    ui.end_row();
    ui.label("restitution e");
    ui.monospace(format!("{:.3}", a.restitution));
    ui.add_enabled(
        b.stepper.uses_restitution(),
        egui::DragValue::new(&mut b.restitution)
            .range(0.0..=1.0)
            .speed(0.01),
    )
    .on_disabled_hover_text(format!(
        "The {} stepper is inelastic by construction: it has no restitution coefficient",
        b.stepper
    ));
    ui.end_row();
    ui.label("friction edges k");
    if planar {
        ui.monospace("2");
        ui.monospace("2")
            .on_hover_text("Planar contacts always use the pair ±t");
    } else {
        ui.monospace(a.edges.to_string());
        ui.add(egui::DragValue::new(&mut b.edges).range(3..=64));
    }
    ui.end_row();
}
