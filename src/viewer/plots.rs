//! The panel's plots of the recent history ([`History`], bounded in time and
//! points): energy, contacts and LCP size, step time, and under NSGS the
//! sweeps per step and the residual each step stopped at, on a log scale.
//! In compare mode, first A's and B's energy, deepest gap, contacts and
//! step time overlaid, and the divergence between them.

use super::compare::Compare;
use super::sim::{History, Sample};
use bevy_egui::egui;
use egui_plot::{Corner, GridMark, HoverPosition, Legend, Line, Plot, PlotPoints, VLine};
use std::collections::VecDeque;

fn series(history: &History, f: impl Fn(&Sample) -> f64) -> PlotPoints<'static> {
    samples(&history.samples, f)
}

/// The finite values of `f` over `samples` (a step without contacts has no
/// deepest gap).
fn samples(samples: &VecDeque<Sample>, f: impl Fn(&Sample) -> f64) -> PlotPoints<'static> {
    samples
        .iter()
        .map(|s| [s.t, f(s)])
        .filter(|p| p[1].is_finite())
        .collect()
}

/// log₁₀ of the residuals of the steps that had a problem to solve (a
/// step without contacts reports 0, which has no logarithm).
fn log_residuals(history: &History) -> Vec<[f64; 2]> {
    history
        .samples
        .iter()
        .filter(|s| s.residual > 0.0 && s.residual.is_finite())
        .map(|s| [s.t, s.residual.log10()])
        .collect()
}

/// A log₁₀ axis's label: the power of ten (`1e-4`), or its mantissa too
/// between whole decades (`3e-4`).
fn power_of_ten(mark: GridMark, _range: &std::ops::RangeInclusive<f64>) -> String {
    let exponent = mark.value.round();
    if (mark.value - exponent).abs() < 1e-9 {
        format!("1e{exponent:.0}")
    } else {
        format!("{:.0e}", 10f64.powf(mark.value))
    }
}

/// A small fixed plot with a legend.
fn plot(id: &str) -> Plot<'static> {
    Plot::new(id.to_owned())
        .height(82.0)
        .legend(
            Legend::default()
                .position(Corner::LeftTop)
                .text_style(egui::TextStyle::Small)
                .background_alpha(0.5),
        )
        .allow_drag(false)
        .allow_zoom(false)
        .allow_scroll(false)
        .allow_boxed_zoom(false)
        .y_axis_min_width(36.0)
}

/// Compare mode's plots: A's and B's energy, deepest gap, contacts and step
/// time overlaid ("A", "B"), and the divergence.
fn compare_plots(ui: &mut egui::Ui, history: &History, compare: &Compare) {
    let overlaid = |ui: &mut egui::Ui, id: &str, f: &dyn Fn(&Sample) -> f64| {
        plot(id).show(ui, |p| {
            p.line(Line::new("A", samples(&history.samples, f)));
            p.line(Line::new("B", samples(&compare.history.samples, f)));
        });
    };
    ui.label("total energy (J)");
    overlaid(ui, "compare energy", &|s| s.kinetic + s.potential);
    ui.label("deepest gap (m)");
    overlaid(ui, "compare gap", &|s| s.min_gap);
    ui.label("active contacts");
    overlaid(ui, "compare contacts", &|s| s.active_contacts as f64);
    ui.label("step time (ms)");
    overlaid(ui, "compare step time", &|s| s.step_ms);
    ui.label("divergence (m)").on_hover_text(
        "The largest distance between a body in A and the same body in B (as `contactlab compare`)",
    );
    plot("divergence").include_y(0.0).show(ui, |p| {
        let points: Vec<[f64; 2]> = compare.divergence.iter().copied().collect();
        p.line(Line::new("divergence", PlotPoints::from(points)));
    });
}

/// The plots section: in compare mode A's and B's series first; energy,
/// contacts and LCP size, step time, and under NSGS (`nsgs`) its sweeps and
/// residual per step; `marker` is the scrubbed time, if any.
pub fn plots(
    ui: &mut egui::Ui,
    history: &History,
    compare: Option<&Compare>,
    marker: Option<f64>,
    nsgs: bool,
) {
    if let Some(compare) = compare {
        egui::CollapsingHeader::new("A against B")
            .default_open(true)
            .show(ui, |ui| compare_plots(ui, history, compare));
    }
    egui::CollapsingHeader::new("Plots (last 10 s of simulated time)")
        .default_open(true)
        .show(ui, |ui| {
            ui.label("energy (J)");
            plot("energy").show(ui, |p| {
                p.line(Line::new("kinetic", series(history, |s| s.kinetic)));
                p.line(Line::new("potential", series(history, |s| s.potential)));
                p.line(Line::new(
                    "total",
                    series(history, |s| s.kinetic + s.potential),
                ));
                if let Some(t) = marker {
                    p.vline(VLine::new("scrubbed", t));
                }
            });
            ui.label("contacts, LCP size, Lemke pivots");
            plot("lcp").include_y(0.0).show(ui, |p| {
                p.line(Line::new(
                    "active contacts",
                    series(history, |s| s.active_contacts as f64),
                ));
                p.line(Line::new(
                    "LCP size",
                    series(history, |s| s.lcp_size as f64),
                ));
                p.line(Line::new("pivots", series(history, |s| s.pivots as f64)));
                if let Some(t) = marker {
                    p.vline(VLine::new("scrubbed", t));
                }
            });
            ui.label("step time (ms)");
            plot("step time").include_y(0.0).show(ui, |p| {
                p.line(Line::new("step", series(history, |s| s.step_ms)));
            });
            if nsgs {
                ui.label("NSGS sweeps per step");
                plot("sweeps").include_y(0.0).show(ui, |p| {
                    p.line(Line::new("sweeps", series(history, |s| s.sweeps as f64)));
                    if let Some(t) = marker {
                        p.vline(VLine::new("scrubbed", t));
                    }
                });
                ui.label("NSGS residual (log scale)").on_hover_text(
                    "The relative natural-map residual each step stopped at (the largest over merged steps); the tolerance is the goal",
                );
                let residuals = log_residuals(history);
                // Whole decades around the data, so that the axis shows them.
                let (low, high) = residuals
                    .iter()
                    .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), p| {
                        (lo.min(p[1]), hi.max(p[1]))
                    });
                let mut residual_plot = plot("residual").y_axis_formatter(power_of_ten);
                if let (Some(first), Some(last)) = (history.samples.front(), history.samples.back()) {
                    // The same time span as the plots above.
                    residual_plot = residual_plot.include_x(first.t).include_x(last.t);
                }
                if low.is_finite() && high.is_finite() {
                    residual_plot = residual_plot
                        .include_y(low.floor())
                        .include_y(high.ceil().max(low.floor() + 1.0));
                }
                residual_plot
                    .label_formatter(|hover| {
                        let (name, point) = match hover {
                            HoverPosition::NearDataPoint {
                                plot_name,
                                position,
                                ..
                            } => (*plot_name, position),
                            HoverPosition::Elsewhere { position } => ("", position),
                        };
                        Some(format!(
                            "{name}\nt = {:.3} s\n{:.1e}",
                            point.x,
                            10f64.powf(point.y)
                        ))
                    })
                    .show(ui, |p| {
                        p.line(Line::new(
                            "residual",
                            PlotPoints::from(residuals),
                        ));
                        if let Some(t) = marker {
                            p.vline(VLine::new("scrubbed", t));
                        }
                    });
            }
        });
}
