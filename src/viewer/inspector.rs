//! The panel's "Hands" section (pointer tool, perturbation stiffness, throw
//! settings, camera follow) and the inspector of the selected body or
//! drawing part (from [`crate::sim::inspect`]), in both runs of a
//! comparison.

use super::follow::Follow;
use super::hands::{Hands, Selected, Selection, Tool};
use super::overlay::state_color;
use super::sim::Sim;
use crate::geometry::Shape;
use crate::model::{Model, Perturbation};
use crate::sim::inspect;
use crate::sim::throw::Projectile;
use bevy::ecs::system::SystemParam;
use bevy::prelude::{Color, ResMut};
use bevy_egui::egui;

/// What the panel edits of the hands (absent in apps without them).
#[derive(SystemParam)]
pub struct HandsUi<'w> {
    /// The tools' settings.
    pub hands: Option<ResMut<'w, Hands>>,
    /// The selection.
    pub selection: Option<ResMut<'w, Selection>>,
    /// Camera follow.
    pub follow: Option<ResMut<'w, Follow>>,
    /// The file actions.
    pub files: Option<ResMut<'w, super::timeline::FileActions>>,
}

fn to_egui(color: Color) -> egui::Color32 {
    let c = color.to_srgba();
    egui::Color32::from_rgb(
        (c.red * 255.0) as u8,
        (c.green * 255.0) as u8,
        (c.blue * 255.0) as u8,
    )
}

/// Tools, stiffness, throw settings and camera follow.
pub fn hands_section(
    ui: &mut egui::Ui,
    sim: &Sim,
    hands: &mut Hands,
    follow: &mut Follow,
    selection: &Selection,
) {
    let linear = matches!(sim.model(), Model::Linear(_));
    egui::CollapsingHeader::new("Hands")
        .default_open(true)
        .show(ui, |ui| {
            ui.horizontal(|ui| {
                ui.label("left click");
                ui.selectable_value(&mut hands.tool, Tool::Select, "select")
                    .on_hover_text("Click a body to select it; Ctrl + drag perturbs it");
                ui.add_enabled_ui(!linear, |ui| {
                    ui.selectable_value(&mut hands.tool, Tool::Perturb, "perturb")
                        .on_hover_text("Drag a body: a spring pulls it toward the cursor")
                        .on_disabled_hover_text(LINEAR_PERTURB);
                    ui.selectable_value(&mut hands.tool, Tool::Throw, "throw")
                        .on_hover_text("Click to throw a body from the camera toward that point")
                        .on_disabled_hover_text("A generalized linear system has no bodies to add to");
                });
            });
            if linear && hands.tool != Tool::Select {
                hands.tool = Tool::Select;
            }
            let (lo, hi) = Perturbation::RATE_RANGE;
            ui.add_enabled(
                !linear,
                egui::Slider::new(&mut hands.rate, lo..=hi)
                    .logarithmic(true)
                    .text("perturb stiffness k/m (1/s²)")
                    .custom_formatter(|v, _| format!("{v:.0}")),
            )
            .on_hover_text(
                "The spring to the cursor has k = κ·m and c = 2√κ·m for a body of mass m: light and heavy bodies follow alike, with ω = √κ",
            )
            .on_disabled_hover_text(LINEAR_PERTURB);
            if hands.tool == Tool::Throw {
                ui.horizontal(|ui| {
                    ui.label("throw");
                    ui.selectable_value(&mut hands.projectile, Projectile::Sphere, "sphere");
                    ui.selectable_value(&mut hands.projectile, Projectile::Box, "box");
                });
                ui.add(
                    egui::Slider::new(&mut hands.throw_speed, 0.1..=50.0)
                        .logarithmic(true)
                        .text("throw speed (m/s)"),
                );
            }
            ui.horizontal(|ui| {
                ui.label("camera");
                ui.checkbox(&mut follow.selected, "follow selected")
                    .on_hover_text("The view moves with the selected body or part");
                if let Some(name) = &sim.scene.camera.follow {
                    ui.checkbox(&mut follow.scene, format!("follow {name}"))
                        .on_hover_text("The scene's camera hint follows this (unless following the selection)");
                }
            });
            if let Some(message) = &hands.message {
                ui.colored_label(egui::Color32::from_rgb(240, 200, 80), message);
            }
            if selection.0.is_none() {
                ui.label(egui::RichText::new("Click a body to inspect it (Esc clears).").weak());
            }
        });
}

const LINEAR_PERTURB: &str = "A generalized linear system has no bodies: its coordinates are not points a spring could pull (perturbation works on rigid bodies)";

/// `x`, or 0 when it is below 1e-12 of `scale` or below what `digits`
/// decimals show: rounding noise reads 0, not +1.39e-17 or −0.0000.
fn zeroed(x: f64, scale: f64, digits: i32) -> f64 {
    if x.abs() < 1e-12 * scale.abs() || x.abs() < 0.5 * 10f64.powi(-digits) {
        0.0
    } else {
        x
    }
}

/// A number in scientific notation, 0 below 1e-12 of `scale`.
fn sci(x: f64, scale: f64) -> String {
    let x = if x.abs() < 1e-12 * scale.abs() {
        0.0
    } else {
        x
    };
    if x == 0.0 {
        "0".to_owned()
    } else {
        format!("{x:+.2e}")
    }
}

fn vector(v: &nalgebra::Vector3<f64>, planar: bool) -> String {
    let scale = v.amax();
    let c = |x: f64| zeroed(x, scale, 4);
    if planar {
        format!("({:+.4}, {:+.4})", c(v.x), c(v.y))
    } else {
        format!("({:+.4}, {:+.4}, {:+.4})", c(v.x), c(v.y), c(v.z))
    }
}

fn shape_text(shape: &Shape, planar: bool) -> String {
    match *shape {
        Shape::Sphere { radius } if planar => format!("disk r = {radius} m"),
        Shape::Sphere { radius } => format!("sphere r = {radius} m"),
        Shape::Capsule {
            half_length,
            radius,
        } => format!("capsule ½l = {half_length} m, r = {radius} m"),
        Shape::Box { half_extents: h } if planar => format!("box ½ = {} × {} m", h[0], h[1]),
        Shape::Box { half_extents: h } => format!("box ½ = {} × {} × {} m", h[0], h[1], h[2]),
    }
}

/// The rows of a body's numbers: (label, value).
fn body_rows(report: &inspect::BodyReport, planar: bool) -> Vec<(&'static str, String)> {
    let mut rows = vec![
        ("mass", format!("{} kg", report.mass)),
        ("position (m)", vector(&report.position, planar)),
    ];
    if planar {
        let (_, _, angle) = report.orientation.euler_angles();
        rows.push(("angle (rad)", format!("{:+.4}", zeroed(angle, 1.0, 4))));
    } else {
        let q = report.orientation.quaternion();
        rows.push((
            "orientation",
            format!("w {:+.3} ({:+.3}, {:+.3}, {:+.3})", q.w, q.i, q.j, q.k),
        ));
    }
    rows.push(("velocity (m/s)", vector(&report.velocity, planar)));
    if planar {
        rows.push((
            "ω (rad/s)",
            format!("{:+.4}", zeroed(report.angular_velocity.z, 1.0, 4)),
        ));
    } else {
        rows.push(("ω (rad/s)", vector(&report.angular_velocity, false)));
    }
    rows.push(("kinetic energy", format!("{:.4e} J", report.kinetic_energy)));
    rows.push(("contact force (N)", vector(&report.resultant, planar)));
    if let Some(p) = &report.perturbation {
        rows.push(("perturbation (N)", vector(&p.force, planar)));
    }
    rows
}

/// A body's contacts in the last step, as a table (`id` tells the tables of
/// A and B apart).
fn contacts_table(
    ui: &mut egui::Ui,
    sim: &crate::sim::Simulation,
    report: &inspect::BodyReport,
    id: &str,
) {
    if report.contacts.is_empty() {
        ui.label(egui::RichText::new("no contacts in the last step").weak());
        return;
    }
    let length = super::sim::rigid(sim).map_or(1.0, |s| s.length_scale());
    let impulse = report
        .contacts
        .iter()
        .map(|c| c.normal_impulse.abs().max(c.friction_impulse.abs()))
        .fold(0.0, f64::max);
    egui::Grid::new(("inspector contacts", id))
        .num_columns(5)
        .spacing([12.0, 4.0])
        .striped(true)
        .show(ui, |ui| {
            ui.strong("with");
            ui.strong("gap (m)");
            ui.strong("c_n (N·s)");
            ui.strong("|β| (N·s)");
            ui.strong("state");
            ui.end_row();
            for c in &report.contacts {
                ui.label(&c.other);
                ui.monospace(sci(c.gap, length));
                ui.monospace(sci(c.normal_impulse, impulse));
                ui.monospace(sci(c.friction_impulse, impulse));
                ui.colored_label(to_egui(state_color(c.state)), c.state.name());
                ui.end_row();
            }
        });
}

/// The inspector: the selected body's or part's numbers, and with a
/// comparison's run `b` the same body's numbers in B beside A's.
pub fn inspector_section(
    ui: &mut egui::Ui,
    sim: &Sim,
    b: Option<&crate::sim::Simulation>,
    selection: &mut Selection,
) {
    let Some(selected) = selection.0 else {
        return;
    };
    let planar = sim.model().is_planar();
    egui::CollapsingHeader::new("Inspector")
        .default_open(true)
        .show(ui, |ui| match selected {
            Selected::Body(i) => {
                let Some(report) = inspect::body(sim, i) else {
                    selection.0 = None;
                    return;
                };
                ui.horizontal(|ui| {
                    ui.strong(&report.name);
                    ui.label(shape_text(&report.shape, planar));
                });
                let rows = body_rows(&report, planar);
                let in_b = b.and_then(|b| inspect::body(b, i).map(|r| (b, r)));
                let rows_b = in_b.as_ref().map(|(_, r)| body_rows(r, planar));
                // With a run B each row is A's value, and B's under it in the
                // ghost's tint (the panel is too narrow for two columns of
                // vectors).
                let ghost = super::compare_panel::ghost_color();
                egui::Grid::new("inspector body")
                    .num_columns(2)
                    .show(ui, |ui| {
                        for (label, value) in &rows {
                            ui.label(*label);
                            ui.monospace(value);
                            ui.end_row();
                            if let Some(rows_b) = &rows_b {
                                let other = rows_b.iter().find(|(l, _)| l == label);
                                ui.label(egui::RichText::new("  in B").color(ghost));
                                ui.label(
                                    egui::RichText::new(other.map_or("–", |(_, v)| v.as_str()))
                                        .monospace()
                                        .color(ghost),
                                );
                                ui.end_row();
                            }
                        }
                    });
                if let Some((b, report_b)) = &in_b {
                    ui.label(egui::RichText::new("A's contacts").small());
                    contacts_table(ui, sim, &report, "A");
                    ui.label(egui::RichText::new("B's contacts").small().color(ghost));
                    contacts_table(ui, b, report_b, "B");
                } else {
                    contacts_table(ui, sim, &report, "A");
                }
            }
            Selected::Part(i) => {
                let Some(report) = inspect::part(sim, i) else {
                    selection.0 = None;
                    return;
                };
                ui.strong(format!("drawing part {}", report.name));
                let (x, y, angle) = report.pose;
                ui.monospace(format!("x {x:+.5} m  y {y:+.5} m  angle {angle:+.4} rad"));
                egui::Grid::new("inspector part")
                    .num_columns(3)
                    .show(ui, |ui| {
                        ui.strong("coordinate");
                        ui.strong("q");
                        ui.strong("v");
                        ui.end_row();
                        for (name, q, v) in &report.coordinates {
                            ui.monospace(name);
                            ui.monospace(format!("{q:+.5}"));
                            ui.monospace(format!("{v:+.5}"));
                            ui.end_row();
                        }
                    });
            }
        });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_noise_reads_zero() {
        assert_eq!(
            vector(&nalgebra::Vector3::new(1.0, 1.39e-17, -1e-6), false),
            "(+1.0000, +0.0000, +0.0000)"
        );
        assert_eq!(sci(1.819e-17, 0.5), "0");
        assert_eq!(sci(-2.5e-3, 0.5), "-2.50e-3");
        assert_eq!(zeroed(-0.00001, 1.0, 4), 0.0);
    }
}
