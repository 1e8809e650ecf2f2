//! The interactive viewer: a thin Bevy shell over [`crate::sim::Simulation`].
//!
//! - [`sim`]: the headless part ([`SimPlugin`]): the simulation as a resource,
//!   one step per fixed tick, time settings, body entities and their
//!   interpolated transforms. It runs under `MinimalPlugins` in the tests.
//! - [`visuals`]: surfaces, lights, background and the surface grids;
//!   [`body_meshes`]: the bodies' shared meshes and materials.
//! - [`material`]: [`material::LabMaterial`], the one (cheap) surface shader.
//! - [`drawing`]: a scene's `drawing` section (the woodpecker's pole, sleeve
//!   and bird), posed from the generalized coordinates.
//! - [`overlay`]: contact points, normals, friction arrows and pyramids.
//! - [`camera`]: orthographic (planar) and orbit (spatial) cameras;
//!   [`follow`]: the camera following a body or a drawing part.
//! - [`hands`]: the pointer on the scene: picking, selection, the
//!   perturbation drag, the throw tool; [`inspector`]: the panel's "Hands"
//!   and inspector sections; [`timeline`]: the history scrubber, snapshots
//!   and "save scene as".
//! - [`panel`]: the egui side panel and keyboard shortcuts; [`plots`]: its
//!   plots.
//! - [`compare`]: a comparison file opened as two runs in lockstep, B drawn
//!   as a ghost over A; [`split`]: the split view, A and B side by side;
//!   [`compare_panel`]: the panel's "Compare" section.
//! - [`reload`]: the Reload button, the scene picker and hot reload.
//! - [`screenshot`]: `--screenshot PATH --frames N`.
//! - [`frame_rate`]: the wall-clock frame rate, shown in the panel.
//! - [`record`]: deterministic video capture (Record button, `contactlab record`).

pub mod body_meshes;
pub mod camera;
pub mod compare;
pub mod compare_panel;
pub mod drawing;
pub mod follow;
pub mod frame_rate;
pub mod hands;
pub mod inspector;
pub mod material;
pub mod overlay;
pub mod panel;
pub mod plots;
pub mod record;
pub mod reload;
pub mod screenshot;
pub mod sim;
pub mod split;
pub mod timeline;
pub mod visuals;
pub mod worker;

pub use sim::{
    BodyVisual, History, PreviousState, Sample, SceneEpoch, SceneRoot, Sim, SimControl, SimPlugin,
    SimSystems, SurfaceVisual,
};

use crate::cli::{Overrides, ViewArgs, apply_overrides};
use crate::scene;
use crate::sim::Simulation;
use bevy::prelude::*;
use bevy::window::{PresentMode, WindowResolution};
use bevy_egui::EguiPlugin;
use std::path::{Path, PathBuf};

/// The scene opened when none is given.
pub const DEFAULT_SCENE: &str = "scenes/rod.ron";

/// Where the running scene came from, for reloading it and for the picker.
#[derive(Resource, Debug, Clone)]
pub struct SceneSource {
    /// The scene file.
    pub path: PathBuf,
    /// The command line's parameter overrides (reapplied on reload when they fit).
    pub overrides: Overrides,
    /// The last load error, shown in the panel.
    pub error: Option<String>,
    /// Reload the file when it changes on disk.
    pub watch: bool,
    /// A reload of the same file keeps the panel's parameters instead of the
    /// file's own.
    pub keep_parameters: bool,
}

impl SceneSource {
    /// A scene file opened with the command line's overrides, watched, with
    /// the file's parameters winning on reload.
    pub fn new(path: PathBuf, overrides: Overrides) -> Self {
        Self {
            path,
            overrides,
            error: None,
            watch: true,
            keep_parameters: false,
        }
    }
}

/// Loads a scene file and applies the overrides.
pub fn load_simulation(path: &Path, overrides: &Overrides) -> Result<Simulation, String> {
    let scene = scene::load(path).map_err(|e| e.to_string())?;
    let params = apply_overrides(&scene, overrides)?;
    for warning in params.warnings() {
        eprintln!("contactlab: {warning}");
    }
    let mut simulation = Simulation::with_params(scene, params);
    overrides.apply_settings(simulation.step_settings_mut());
    Ok(simulation)
}

/// Loads a scene file, applies the overrides and starts from a snapshot.
pub fn load_simulation_from(
    path: &Path,
    overrides: &Overrides,
    state: Option<&Path>,
) -> Result<Simulation, String> {
    let mut simulation = load_simulation(path, overrides)?;
    start_from(&mut simulation, state)?;
    Ok(simulation)
}

/// Puts a snapshot's state into `simulation`, when one is given.
fn start_from(simulation: &mut Simulation, state: Option<&Path>) -> Result<(), String> {
    if let Some(state) = state
        && let Some(note) =
            crate::sim::snapshot::load_into(simulation, state).map_err(|e| e.to_string())?
    {
        eprintln!("{note}");
    }
    Ok(())
}

/// The default scene: `scenes/rod.ron` from the working directory, or from the
/// crate's own directory when the working directory has none.
fn default_scene() -> PathBuf {
    let local = PathBuf::from(DEFAULT_SCENE);
    if local.exists() {
        return local;
    }
    let bundled = Path::new(env!("CARGO_MANIFEST_DIR")).join(DEFAULT_SCENE);
    if bundled.exists() { bundled } else { local }
}

/// Checks that a graphics adapter is there before Bevy starts (it panics
/// without one): a GPU, or Mesa's software Vulkan driver (llvmpipe). Returns
/// whether it renders in software (a CPU adapter).
pub fn require_graphics_adapter() -> Result<bool, String> {
    let instance =
        wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    let adapter = bevy::tasks::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
        power_preference: wgpu::PowerPreference::HighPerformance,
        ..Default::default()
    }));
    match adapter {
        Ok(adapter) => Ok(adapter.get_info().device_type == wgpu::DeviceType::Cpu),
        Err(e) => Err(format!(
            "no graphics adapter ({e}): rendering needs a GPU driver or Mesa's software Vulkan (Debian/Ubuntu: apt-get install mesa-vulkan-drivers)"
        )),
    }
}

/// The multisampling `--msaa` asks for, of the viewer or a recording: 1
/// (off) or 4 samples per pixel.
pub fn msaa_samples(samples: u32) -> Result<Msaa, String> {
    match samples {
        1 => Ok(Msaa::Off),
        4 => Ok(Msaa::Sample4),
        n => Err(format!("--msaa {n}: must be 1 (off) or 4")),
    }
}

/// The window, the rendering and UI plugins around [`SimPlugin`].
pub struct ViewerPlugin;

impl Plugin for ViewerPlugin {
    fn build(&self, app: &mut App) {
        app.add_plugins(EguiPlugin::default()).add_plugins((
            material::LabMaterialPlugin,
            frame_rate::FrameRatePlugin,
            visuals::VisualsPlugin,
            overlay::OverlayPlugin,
            camera::CameraPlugin,
            drawing::DrawingPlugin,
            panel::PanelPlugin,
            reload::ReloadPlugin,
            hands::HandsPlugin,
            hands::HandsDrawPlugin,
            timeline::TimelinePlugin,
            split::SplitPlugin,
        ));
    }
}

/// Opens the viewer.
pub fn run(args: ViewArgs) -> Result<(), String> {
    let path = args.scene.clone().unwrap_or_else(default_scene);
    let (mut simulation, mut compare) = compare::load_scene_or_comparison(&path, &args.overrides)?;
    start_from(&mut simulation, args.state.as_deref())?;
    if let Some(compare) = compare.as_mut() {
        start_from(&mut compare.b, args.state.as_deref())?;
        compare.previous_q.clone_from(&compare.b.state.q);
        compare.history.restart(&compare.b);
    }
    let drag = screenshot::ScriptedDrag::parse(args.drag.as_deref(), args.drag_by.as_deref())?;
    // Checked before the adapter, so that a bad flag is named first.
    let requested = args.msaa.map(msaa_samples).transpose()?;
    let software = require_graphics_adapter()?;
    // Without `--msaa`: 4 samples on a GPU, none on a software renderer,
    // where the 1,000-grain silo drew a frame in 185 ms with 4 samples and
    // in 80 ms without (Mesa's llvmpipe, this machine, paused).
    let msaa = requested.unwrap_or(if software { Msaa::Off } else { Msaa::Sample4 });
    let title = match &compare {
        Some(compare) => format!("contactlab — {} (A against B)", compare.name),
        None => format!("contactlab — {}", simulation.scene.name),
    };
    let mut app = App::new();
    app.add_plugins(
        DefaultPlugins
            .set(WindowPlugin {
                primary_window: Some(Window {
                    title,
                    resolution: WindowResolution::new(1280, 800),
                    present_mode: PresentMode::AutoVsync,
                    ..default()
                }),
                ..default()
            })
            .set(bevy::log::LogPlugin {
                filter: "wgpu=error,naga=warn,bevy_render=warn,bevy_winit=warn".to_owned(),
                ..default()
            }),
    )
    .insert_resource(SceneSource::new(path, args.overrides.clone()))
    .insert_resource(camera::WindowMsaa(msaa))
    .add_plugins(SimPlugin::comparing(simulation, compare))
    .add_plugins(ViewerPlugin)
    .add_plugins(record::RecordPlugin);
    if args.paused {
        app.world_mut().resource_mut::<SimControl>().paused = true;
    }
    let failure = screenshot::Failure::default();
    if let Some(target) = args.screenshot {
        app.add_plugins(screenshot::ScreenshotPlugin {
            path: target,
            frames: args.frames,
            failure: failure.clone(),
            drag,
        });
    }
    match app.run() {
        AppExit::Success => Ok(()),
        AppExit::Error(code) => Err(failure
            .take()
            .unwrap_or_else(|| format!("the viewer exited with code {code}"))),
    }
}
