//! The viewer's side of recording: the Record section of the panel, F9, and
//! starting a recording of the window (named `recordings/<scene>-<UTC
//! timestamp>.<ext>`), which takes the recording size, hides the panel unless
//! asked and shows `● REC` in its title.

use super::{CaptureSource, Phase, RecordSettings, Recording, Saved};
use crate::record::{Format, VideoSpec, VideoWriter};
use crate::viewer::panel::PanelLayout;
use crate::viewer::sim::Sim;
use bevy::prelude::*;
use bevy::time::TimeUpdateStrategy;
use bevy::window::PrimaryWindow;
use bevy_egui::egui;
use std::time::Duration;

/// F9 starts and stops a recording.
pub(super) fn record_key(
    keys: Res<ButtonInput<KeyCode>>,
    layout: Res<PanelLayout>,
    mut settings: ResMut<RecordSettings>,
) {
    if !layout.text_editing && keys.just_pressed(KeyCode::F9) {
        settings.toggle = true;
    }
}

/// Days since 1970-01-01 → (year, month, day) (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// `YYYYMMDD-HHMMSS` (UTC).
pub(crate) fn timestamp() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    let s = secs.rem_euclid(86_400);
    format!(
        "{y:04}{m:02}{d:02}-{:02}{:02}{:02}",
        s / 3600,
        s / 60 % 60,
        s % 60
    )
}

fn slug(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let s = s
        .split('-')
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("-");
    if s.is_empty() { "scene".to_owned() } else { s }
}

/// Starts or stops the viewer's recording when asked.
pub(super) fn toggle_recording(world: &mut World) {
    if !std::mem::take(&mut world.resource_mut::<RecordSettings>().toggle) {
        return;
    }
    if world.contains_resource::<Recording>() {
        let mut rec = world.resource_mut::<Recording>();
        if rec.phase == Phase::Capturing {
            rec.phase = Phase::Draining;
        } else if matches!(rec.phase, Phase::Warmup { .. }) {
            rec.error = Some("stopped before the first frame".to_owned());
            rec.phase = Phase::Draining;
        }
        return;
    }
    let settings = world.resource::<RecordSettings>().clone();
    match start_viewer_recording(world, &settings) {
        Ok(()) => world.resource_mut::<RecordSettings>().outcome = None,
        Err(e) => world.resource_mut::<RecordSettings>().outcome = Some(Err(e)),
    }
}

fn start_viewer_recording(world: &mut World, settings: &RecordSettings) -> Result<(), String> {
    let mut windows = world.query_filtered::<&mut Window, With<PrimaryWindow>>();
    let window = windows
        .single(world)
        .map_err(|_| "no window to record".to_owned())?;
    let window_size = window.physical_size();
    let title = window.title.clone();
    let (mut w, mut h) = settings.size.unwrap_or((window_size.x, window_size.y));
    if settings.format == Format::Mp4 {
        (w, h) = (w & !1, h & !1);
    }
    let name = slug(&world.resource::<Sim>().scene.name);
    std::fs::create_dir_all(&settings.dir)
        .map_err(|e| format!("{}: {e}", settings.dir.display()))?;
    let file = match settings.format {
        Format::Mp4 => format!("{name}-{}.mp4", timestamp()),
        Format::Gif => format!("{name}-{}.gif", timestamp()),
        Format::PngSequence => format!("{name}-{}/", timestamp()),
    };
    let spec = VideoSpec::new(settings.dir.join(file), w, h, settings.fps)?.with_palette_hints(
        super::super::visuals::palette_hints(world.resource::<Sim>()),
    );
    let writer = VideoWriter::create(&spec)?;
    let panel_visible = world.resource::<PanelLayout>().visible;
    world.resource_mut::<PanelLayout>().visible = settings.with_panel;
    if UVec2::new(w, h) != window_size
        && let Ok(mut window) = windows.single_mut(world)
    {
        window.resolution.set_physical_resolution(w, h);
    }
    world.insert_resource(TimeUpdateStrategy::ManualDuration(Duration::ZERO));
    world.insert_resource(Recording {
        saved: Some(Saved {
            panel_visible,
            window_size: (UVec2::new(w, h) != window_size).then_some(window_size),
            title: Some(title),
        }),
        ..Recording::new(spec, writer, settings.clone(), CaptureSource::Window)
    });
    Ok(())
}

/// The panel's Record section.
pub fn record_section(ui: &mut egui::Ui, settings: &mut RecordSettings, rec: Option<&Recording>) {
    egui::CollapsingHeader::new("Record")
        .default_open(false)
        .show(ui, |ui| {
            let recording = rec.is_some();
            ui.add_enabled_ui(!recording, |ui| {
                ui.horizontal(|ui| {
                    ui.label("format");
                    for f in Format::ALL {
                        ui.selectable_value(&mut settings.format, f, f.name());
                    }
                });
                ui.horizontal(|ui| {
                    ui.label("fps");
                    for fps in [24, 30, 50, 60] {
                        ui.selectable_value(&mut settings.fps, fps, fps.to_string());
                    }
                });
                ui.add(
                    egui::Slider::new(&mut settings.speed, 0.01..=10.0)
                        .logarithmic(true)
                        .text("playback speed")
                        .custom_formatter(|v, _| format!("{v:.2}×")),
                )
                .on_hover_text("Simulated seconds per second of video (0.1 = 10× slow motion)");
                ui.horizontal(|ui| {
                    ui.label("size");
                    egui::ComboBox::from_id_salt("record size")
                        .selected_text(match settings.size {
                            Some((w, h)) => format!("{w}×{h}"),
                            None => "window".to_owned(),
                        })
                        .show_ui(ui, |ui| {
                            ui.selectable_value(&mut settings.size, None, "window");
                            for s in [(640, 360), (854, 480), (1280, 720), (1920, 1080)] {
                                ui.selectable_value(
                                    &mut settings.size,
                                    Some(s),
                                    format!("{}×{}", s.0, s.1),
                                );
                            }
                        });
                });
                ui.horizontal(|ui| {
                    ui.checkbox(&mut settings.with_panel, "include panel");
                    ui.checkbox(&mut settings.overlay, "overlay")
                        .on_hover_text("Scene, t, μ, e, h, k and stepper in the corner of the video");
                });
            });
            let label = if recording { "⏹ Stop" } else { "⏺ Record" };
            ui.horizontal(|ui| {
                if ui.button(label).on_hover_text("F9").clicked() {
                    settings.toggle = true;
                }
                if let Some(rec) = rec {
                    ui.colored_label(
                        egui::Color32::from_rgb(255, 80, 80),
                        format!("● REC {} frames", rec.frames()),
                    );
                }
            });
            if let Some(outcome) = &settings.outcome {
                match outcome {
                    Ok(message) => ui.label(message),
                    Err(message) => ui.colored_label(egui::Color32::from_rgb(255, 90, 80), message),
                };
            }
            ui.label(
                egui::RichText::new(format!(
                    "Frames step the simulation by speed/fps exactly, however slowly they render; files go to {}/. Without the panel it is hidden while recording: F9 stops.",
                    settings.dir.display()
                ))
                .small()
                .weak(),
            );
        });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_454), (2026, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(slug("Four balls!"), "four-balls");
    }
}
