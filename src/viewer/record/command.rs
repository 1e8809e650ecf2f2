//! `contactlab record`: the viewer's scene, cameras and overlay, rendered into
//! an offscreen image of the video's size with no window at all (no display
//! or X server needed; Mesa's software Vulkan is enough), every frame read
//! back and encoded, then exit. `--compare` (or a comparison file) films
//! runs A and B together, as the viewer shows them: B a ghost over A, or
//! the two side by side, each labelled.

use super::burn_in_overlay;
use super::{CaptureSource, Outcome, RecordSettings, Recording, add_capture_systems};
use crate::record::{Format, VideoSpec, VideoWriter};
use crate::scene::overlap::rounded;
use crate::viewer::camera::OffscreenTarget;
use crate::viewer::panel::PanelLayout;
use bevy::app::ScheduleRunnerPlugin;
use bevy::asset::RenderAssetUsages;
use bevy::prelude::*;
use bevy::render::render_resource::{TextureFormat, TextureUsages};
use bevy::time::TimeUpdateStrategy;
use bevy::window::ExitCondition;
use bevy_egui::EguiPrimaryContextPass;
use indicatif::{ProgressBar, ProgressStyle};
use std::time::{Duration, Instant};

/// The slowest and fastest playback `--speed`: 1,000× slow motion to 1,000×
/// fast forward.
const MIN_SPEED: f64 = 1e-3;
/// See [`MIN_SPEED`].
const MAX_SPEED: f64 = 1e3;
/// The most frames a recording takes.
const MAX_FRAMES: f64 = 1e7;

/// `contactlab record SCENE --out FILE|DIR/ …`: records the scene from its
/// start, headless of any interaction, then exits.
pub fn record_command(args: &crate::cli::RecordArgs) -> Result<(), String> {
    let format = Format::of_path(&args.out)?;
    let (width, height) = crate::record::parse_size(&args.size)?;
    if !(MIN_SPEED..=MAX_SPEED).contains(&args.speed) {
        return Err(format!(
            "--speed {}: must be between {MIN_SPEED} and {MAX_SPEED} (simulated seconds per second of video)",
            rounded(args.speed)
        ));
    }
    let msaa = crate::viewer::msaa_samples(args.msaa)?;
    let most = crate::record::MAX_FPS;
    let fps = match args.fps {
        None => format.default_fps(),
        Some(fps) => u32::try_from(fps)
            .ok()
            .filter(|f| (1..=most).contains(f))
            .ok_or_else(|| format!("--fps {fps}: must be between 1 and {most}"))?,
    };
    let spec = VideoSpec::new(args.out.clone(), width, height, fps)?;
    let filmed_twice = args.compare
        || crate::scene::comparison::is_comparison_file(&args.scene)
        || args.view.is_some();
    let (simulation, compare) = if filmed_twice {
        let sides = [
            args.a.as_deref().unwrap_or(""),
            args.b.as_deref().unwrap_or(""),
        ];
        let (a, b) = crate::viewer::compare::load_comparison_with(
            &args.scene,
            &args.overrides,
            sides,
            args.view,
        )?;
        (a, Some(b))
    } else {
        (
            crate::viewer::load_simulation(&args.scene, &args.overrides)?,
            None,
        )
    };
    let spec = spec.with_palette_hints(crate::viewer::visuals::palette_hints(&simulation));
    let duration = simulation.params.duration;
    let frames = (duration / args.speed * fps as f64).round();
    if !(1.0..=MAX_FRAMES).contains(&frames) {
        return Err(format!(
            "--duration {duration}: gives {frames:.3e} frames at --fps {} --speed {}, and a recording has 1 to {MAX_FRAMES:e}",
            fps, args.speed
        ));
    }
    let frames = frames as u64;
    // SIGINT, SIGTERM and SIGHUP end the app at its next frame, so the
    // writer, dropped unfinished, deletes its temporary output (installed
    // before Bevy's plugins, whose Ctrl-C handler then stands aside).
    crate::interrupt::install()?;
    // Fails here, before anything renders, if the output cannot be written
    // (and, dropped, deletes what it began if there is nothing to render with).
    let writer = VideoWriter::create(&spec)?;
    crate::viewer::require_graphics_adapter()?;
    let settings = RecordSettings {
        fps,
        speed: args.speed,
        size: Some((width, height)),
        format,
        with_panel: args.with_panel,
        overlay: args.overlay,
        ..RecordSettings::default()
    };
    let progress = ProgressBar::new(frames);
    if let Ok(style) =
        ProgressStyle::with_template("{bar:40} {pos}/{len} frames  {elapsed} elapsed, ETA {eta}")
    {
        progress.set_style(style);
    }
    let outcome = Outcome::default();
    let started = Instant::now();
    let mut app = App::new();
    app.add_plugins(
        DefaultPlugins
            .set(WindowPlugin {
                primary_window: None,
                exit_condition: ExitCondition::DontExit,
                close_when_requested: false,
                ..default()
            })
            // No window, so no windowing system: the app loop runs itself.
            .disable::<bevy::winit::WinitPlugin>()
            .set(bevy::render::RenderPlugin {
                // Every pipeline exists before the frame that needs it is
                // drawn: no frame misses an object whose shader compiles late.
                synchronous_pipeline_compilation: true,
                ..default()
            })
            .set(bevy::log::LogPlugin {
                // Only what needs attention: the progress bar is the output.
                // (That the adapter renders in software is expected here.)
                filter: "warn,wgpu=error,bevy_render::renderer=error,bevy_render::gpu_readback=error,bevy_egui=error".to_owned(),
                ..default()
            }),
    )
    .add_plugins(ScheduleRunnerPlugin::run_loop(Duration::ZERO));
    let image = app
        .world_mut()
        .resource_mut::<Assets<Image>>()
        .add(render_target(width, height));
    app.insert_resource(OffscreenTarget {
        image: image.clone(),
        panel: args.with_panel,
        msaa,
    })
    .insert_resource(crate::viewer::SceneSource {
        // A recording is reproducible: no reload while it runs.
        watch: false,
        ..crate::viewer::SceneSource::new(args.scene.clone(), args.overrides.clone())
    })
    .add_plugins(crate::viewer::SimPlugin::comparing(simulation, compare))
    .add_plugins(crate::viewer::ViewerPlugin)
    .insert_resource(TimeUpdateStrategy::ManualDuration(Duration::ZERO))
    .insert_resource(settings.clone())
    .insert_resource(Recording {
        total: Some(frames),
        exit_when_done: true,
        progress: Some(progress),
        outcome: outcome.clone(),
        ..Recording::new(spec, writer, settings, CaptureSource::Image(image))
    })
    .add_systems(Startup, hide_panel_unless_wanted)
    .add_systems(First, exit_on_signal)
    .add_systems(EguiPrimaryContextPass, burn_in_overlay);
    add_capture_systems(&mut app);
    let exit = app.run();
    let result = outcome.take().unwrap_or_else(|| {
        Err(match (crate::interrupt::received(), exit) {
            (Some(signal), _) => format!(
                "interrupted by {}: {} was not written",
                crate::interrupt::name(signal),
                args.out.display()
            ),
            (None, AppExit::Success) => {
                "the recorder stopped before the recording ended".to_owned()
            }
            // Bevy's Ctrl-C handler exits with 130 (128 + SIGINT).
            (None, AppExit::Error(code)) if code.get() == 130 => {
                format!("interrupted: {} was not written", args.out.display())
            }
            (None, AppExit::Error(code)) => format!("the recorder exited with code {code}"),
        })
    });
    let summary = result?;
    println!(
        "wrote {}: {} frames, {width}x{height}, {} fps, {:.2} s of video ({duration} s simulated at {}x) in {:.1} s",
        summary.path.display(),
        summary.frames,
        fps,
        summary.frames as f64 / fps as f64,
        args.speed,
        started.elapsed().as_secs_f64()
    );
    if summary.stale > 0 {
        println!(
            "removed {} frames of an earlier recording from {}",
            summary.stale,
            summary.path.display()
        );
    }
    Ok(())
}

/// The image the cameras draw into: RGBA with sRGB encoding (what a window
/// shows), readable by a copy to a buffer.
fn render_target(width: u32, height: u32) -> Image {
    let mut image = Image::new_target_texture(width, height, TextureFormat::Rgba8UnormSrgb, None);
    image.texture_descriptor.usage |= TextureUsages::COPY_SRC;
    image.asset_usage = RenderAssetUsages::RENDER_WORLD;
    image
}

fn hide_panel_unless_wanted(settings: Res<RecordSettings>, mut layout: ResMut<PanelLayout>) {
    layout.visible = settings.with_panel;
}

/// Ends the app when SIGINT, SIGTERM or SIGHUP arrived
/// ([`crate::interrupt`]), with 128 + the signal's number.
fn exit_on_signal(mut exit: MessageWriter<AppExit>) {
    if let Some(signal) = crate::interrupt::received() {
        exit.write(AppExit::from_code((128 + signal).clamp(1, 255) as u8));
    }
}
