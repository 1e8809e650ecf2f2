//! The headless half of the viewer: the [`Simulation`] as a Bevy resource, one
//! step per fixed tick, the fixed timestep following `params.dt`, playback speed
//! and catch-up cap on virtual time, the history (plot samples and a
//! checkpoint per step for the timeline), the scene's entities (one per body
//! and per surface, following bodies added while running) and their
//! interpolated transforms. Nothing here renders, so [`SimPlugin`] runs under
//! `MinimalPlugins` (see `tests/viewer.rs`).

use super::compare::{Compare, sync_ghost_entities, sync_ghost_transforms};
use super::worker::{FrameClock, StepJob};
use crate::model::{Dimension, Model, RigidSystem};
use crate::scene::SystemSpec;
use crate::sim::Simulation;
use crate::sim::history::Timeline;
use bevy::prelude::*;
use nalgebra::DVector;
use std::collections::VecDeque;
use std::f32::consts::FRAC_PI_2;
use std::time::{Duration, Instant};

/// The running simulation. `params` is the one live parameter struct: the panel
/// edits `sim.params` in place.
#[derive(Resource, Deref, DerefMut)]
pub struct Sim(pub Simulation);

/// The configuration before the last step, for drawing poses between steps.
#[derive(Resource, Debug, Clone)]
pub struct PreviousState {
    /// q before the last step (equal to the current q after a reset).
    pub q: DVector<f64>,
}

/// An entity drawing body `.0` of the rigid system; its `Transform` is the
/// body's pose in physics coordinates (relative to the [`SceneRoot`]).
#[derive(Component, Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyVisual(pub usize);

/// An entity drawing surface (half-space) `.0`; its `Transform` puts the local
/// +Y axis along the surface normal, the origin on the surface.
#[derive(Component, Debug, Clone, Copy, PartialEq, Eq)]
pub struct SurfaceVisual(pub usize);

/// The parent of every body and surface entity: identity for planar scenes
/// (x–y plane, y up, as in Bevy), −90° about X for spatial ones (z up).
#[derive(Component, Debug, Clone, Copy)]
pub struct SceneRoot;

/// Bumped whenever a new [`Sim`] is installed (reload, scene picker): the scene's
/// entities are respawned when it changes.
#[derive(Resource, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SceneEpoch(pub u64);

/// Play/pause, single step, speed and what went wrong.
#[derive(Resource, Debug, Clone)]
pub struct SimControl {
    /// No fixed ticks while paused (virtual time is paused too).
    pub paused: bool,
    /// Take one step at the next opportunity (used while paused).
    pub step_once: bool,
    /// Playback speed: virtual seconds per real second, 0.01 … 10.
    pub speed: f64,
    /// Why the simulation stopped (a step whose LCP was not solved).
    pub halt: Option<String>,
    /// The last step error (invalid parameters); cleared by the next good step.
    pub step_error: Option<String>,
    /// Simulated seconds per wall-clock second over the last half second.
    pub real_time_factor: Option<f64>,
    /// Smoothed wall-clock cost of one step, s.
    pub step_cost: f64,
    /// Wall-clock time per frame that stepping may use before the catch-up is
    /// capped, s.
    pub frame_budget: f64,
    /// At the scene's duration, start it again instead of pausing.
    pub looping: bool,
    /// The run has paused at the scene's duration (or looped) since the
    /// last reset: running on goes past it.
    pub end_passed: bool,
}

impl Default for SimControl {
    fn default() -> Self {
        Self {
            paused: false,
            step_once: false,
            speed: 1.0,
            halt: None,
            step_error: None,
            real_time_factor: None,
            step_cost: 0.0,
            frame_budget: 0.03,
            looping: false,
            end_passed: false,
        }
    }
}

/// Slowest and fastest playback speeds.
pub const SPEED_RANGE: (f64, f64) = (0.01, 10.0);

/// One point of the panel's plots.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Sample {
    /// Simulation time, s.
    pub t: f64,
    /// Kinetic energy, J.
    pub kinetic: f64,
    /// Potential energy, J.
    pub potential: f64,
    /// Contacts carrying a normal impulse.
    pub active_contacts: usize,
    /// Size of the final LCP.
    pub lcp_size: usize,
    /// Lemke pivots of the step.
    pub pivots: usize,
    /// Wall-clock time of the step, ms.
    pub step_ms: f64,
    /// NSGS sweeps of the step (0 with Lemke).
    pub sweeps: usize,
    /// Relative residual of the step's last solve (NSGS: the natural-map
    /// error it stopped at).
    pub residual: f64,
    /// Deepest gap among the contacts near the new configuration, m
    /// (negative: penetration; ∞ when there are none).
    pub min_gap: f64,
}

/// The recent history of the simulation: for the plots, at most
/// [`History::MAX_POINTS`] samples over the last [`History::window`] seconds of
/// simulated time (steps closer together are merged, keeping the largest LCP,
/// pivot count, sweep count, residual and step time); for the timeline, a checkpoint per step
/// ([`Timeline`]: 60 s within a memory cap) to scrub back to and fork from.
#[derive(Resource, Debug, Clone)]
pub struct History {
    /// The samples, oldest first.
    pub samples: VecDeque<Sample>,
    /// Seconds of simulated time kept.
    pub window: f64,
    bucket_start: Option<f64>,
    /// The checkpoints of the timeline scrubber.
    pub timeline: Timeline,
}

impl Default for History {
    fn default() -> Self {
        Self {
            samples: VecDeque::new(),
            window: 10.0,
            bucket_start: None,
            timeline: Timeline::default(),
        }
    }
}

impl History {
    /// Most samples kept over the window.
    pub const MAX_POINTS: usize = 2000;

    /// Adds a step's sample.
    pub fn record(&mut self, s: Sample) {
        let spacing = self.window / Self::MAX_POINTS as f64;
        let open = self
            .bucket_start
            .is_some_and(|t0| s.t >= t0 && s.t - t0 < spacing);
        match self.samples.back_mut() {
            Some(last) if open => {
                // Merge into the newest sample, keeping the worst step costs.
                *last = Sample {
                    lcp_size: last.lcp_size.max(s.lcp_size),
                    pivots: last.pivots.max(s.pivots),
                    step_ms: last.step_ms.max(s.step_ms),
                    sweeps: last.sweeps.max(s.sweeps),
                    residual: last.residual.max(s.residual),
                    active_contacts: last.active_contacts.max(s.active_contacts),
                    min_gap: last.min_gap.min(s.min_gap),
                    ..s
                };
            }
            _ => {
                self.samples.push_back(s);
                self.bucket_start = Some(s.t);
            }
        }
        self.trim(s.t);
    }

    fn trim(&mut self, now: f64) {
        while self
            .samples
            .front()
            .is_some_and(|f| f.t < now - self.window || f.t > now)
        {
            self.samples.pop_front();
        }
    }

    /// Forgets everything.
    pub fn clear(&mut self) {
        self.samples.clear();
        self.bucket_start = None;
        self.timeline.clear();
    }

    /// Forgets everything and starts the timeline at the simulation's state.
    pub fn restart(&mut self, sim: &Simulation) {
        self.clear();
        self.timeline.restart(sim);
    }

    /// Restores timeline checkpoint `index` into `sim` (the scrubber), shown
    /// at once: the bodies, their contacts and the plots' marker follow.
    pub fn scrub(
        &mut self,
        index: usize,
        sim: &mut Simulation,
        previous: &mut PreviousState,
    ) -> bool {
        let done = self.timeline.scrub(index, sim);
        if done {
            previous.q.clone_from(&sim.state.q);
        }
        done
    }

    /// Before a step from a scrubbed state: the plots lose the discarded
    /// future (the timeline forks when the step is recorded).
    fn prepare_fork(&mut self, t: f64) {
        if self.timeline.scrubbing() {
            self.samples.retain(|s| s.t <= t);
            self.bucket_start = None;
        }
    }
}

/// Steps the simulation in `FixedUpdate` and keeps the scene's entities in sync.
/// Insert the simulation with [`SimPlugin::new`].
pub struct SimPlugin {
    simulation: Simulation,
    compare: Option<Compare>,
}

impl SimPlugin {
    /// A plugin that installs `simulation` as the [`Sim`] resource.
    pub fn new(simulation: Simulation) -> Self {
        Self {
            simulation,
            compare: None,
        }
    }

    /// The same, with run B of a comparison ([`Compare`]) stepped in
    /// lockstep with it.
    pub fn comparing(simulation: Simulation, compare: Option<Compare>) -> Self {
        Self {
            simulation,
            compare,
        }
    }
}

/// The system sets of the plugin, for ordering other systems against them.
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SimSystems {
    /// Before the fixed loop: time settings, single steps.
    Prepare,
    /// In `FixedUpdate`: one step.
    Step,
    /// After the fixed loop: transforms, real-time factor.
    Sync,
}

impl Plugin for SimPlugin {
    fn build(&self, app: &mut App) {
        let sim = self.simulation.clone();
        app.insert_resource(PreviousState {
            q: sim.state.q.clone(),
        })
        .insert_resource(Time::<Fixed>::from_duration(
            timestep_of(sim.params.dt).unwrap_or(Duration::from_micros(15625)),
        ))
        .insert_resource({
            let mut history = History::default();
            history.restart(&sim);
            history
        })
        .insert_resource(Sim(sim))
        .init_resource::<SimControl>()
        .init_resource::<SceneEpoch>()
        .init_resource::<StepJob>()
        .init_resource::<FrameClock>()
        .add_systems(
            PreUpdate,
            (
                respawn_scene_entities,
                sync_body_entities,
                sync_ghost_entities,
            )
                .chain(),
        )
        .add_systems(
            RunFixedMainLoop,
            (
                (collect_step, apply_time_settings, single_step)
                    .chain()
                    .in_set(SimSystems::Prepare)
                    .in_set(RunFixedMainLoopSystems::BeforeFixedMainLoop),
                (
                    sync_body_transforms,
                    sync_ghost_transforms,
                    measure_real_time_factor,
                )
                    .in_set(SimSystems::Sync)
                    .in_set(RunFixedMainLoopSystems::AfterFixedMainLoop),
            ),
        )
        .add_systems(FixedUpdate, step_simulation.in_set(SimSystems::Step));
        if let Some(compare) = &self.compare {
            app.insert_resource(compare.clone());
        }
    }
}

/// The fixed timestep for a step size, if it is a usable one.
pub fn timestep_of(dt: f64) -> Option<Duration> {
    if (1e-7..=10.0).contains(&dt) {
        Some(Duration::from_secs_f64(dt))
    } else {
        None
    }
}

/// The rotation from physics coordinates to Bevy's world (y up).
pub fn physics_to_world(dimension: Dimension) -> Quat {
    match dimension {
        Dimension::Planar => Quat::IDENTITY,
        Dimension::Spatial => Quat::from_rotation_x(-FRAC_PI_2),
    }
}

/// The rigid system of the simulation, if it has one.
pub fn rigid(sim: &Simulation) -> Option<&RigidSystem> {
    match sim.model() {
        Model::Rigid(system) => Some(system),
        Model::Linear(_) => None,
    }
}

/// Body i's pose between q0 (α = 0) and q1 (α = 1), in physics coordinates.
pub fn interpolated_pose(
    system: &RigidSystem,
    q0: &DVector<f64>,
    q1: &DVector<f64>,
    i: usize,
    alpha: f64,
) -> (Vec3, Quat) {
    let (p1, r1) = (system.position(q1, i), system.rotation(q1, i));
    let (p, r) = if q0.len() == q1.len() && alpha < 1.0 {
        let (p0, r0) = (system.position(q0, i), system.rotation(q0, i));
        let p = p0 + (p1 - p0) * alpha;
        let r = r0.try_slerp(&r1, alpha, 1e-9).unwrap_or(r1);
        (p, r)
    } else {
        (p1, r1)
    };
    let q = r.quaternion();
    (
        Vec3::new(p.x as f32, p.y as f32, p.z as f32),
        Quat::from_xyzw(q.i as f32, q.j as f32, q.k as f32, q.w as f32).normalize(),
    )
}

/// Where surface i is drawn: its centre (the scene file's point, projected onto
/// the surface) and half size, in physics coordinates.
pub fn surface_placement(sim: &Simulation, i: usize) -> Option<(Vec3, Quat, f32)> {
    let system = rigid(sim)?;
    let surface = system.surfaces.get(i)?;
    let n = surface.normal;
    let (point, extent) = match &sim.scene.file.system {
        SystemSpec::Rigid(spec) => spec
            .surfaces
            .get(i)
            .map(|s| (nalgebra::Vector3::from(s.point), s.extent))
            .unwrap_or((n * surface.offset, 5.0)),
        SystemSpec::Linear(_) => (n * surface.offset, 5.0),
    };
    let centre = point - n * (n.dot(&point) - surface.offset);
    let normal = Vec3::new(n.x as f32, n.y as f32, n.z as f32).normalize_or(Vec3::Y);
    let extent = if extent.is_finite() && extent > 0.0 {
        extent as f32
    } else {
        5.0
    };
    Some((
        Vec3::new(centre.x as f32, centre.y as f32, centre.z as f32),
        Quat::from_rotation_arc(Vec3::Y, normal),
        extent,
    ))
}

/// Spawns the scene's root, body and surface entities when the scene changes.
pub fn respawn_scene_entities(
    mut commands: Commands,
    sim: Res<Sim>,
    epoch: Res<SceneEpoch>,
    mut spawned: Local<Option<SceneEpoch>>,
    roots: Query<Entity, With<SceneRoot>>,
) {
    if *spawned == Some(*epoch) {
        return;
    }
    *spawned = Some(*epoch);
    for root in &roots {
        commands.entity(root).despawn();
    }
    let Some(system) = rigid(&sim) else {
        return;
    };
    let root = commands
        .spawn((
            Name::new("scene"),
            SceneRoot,
            Transform::from_rotation(physics_to_world(system.dimension)),
            Visibility::default(),
        ))
        .id();
    for (i, body) in system.bodies.iter().enumerate() {
        let (translation, rotation) = interpolated_pose(system, &sim.state.q, &sim.state.q, i, 1.0);
        commands.spawn((
            Name::new(body.name.clone()),
            BodyVisual(i),
            Transform::from_translation(translation).with_rotation(rotation),
            Visibility::default(),
            ChildOf(root),
        ));
    }
    for (i, surface) in system.surfaces.iter().enumerate() {
        let Some((centre, rotation, _)) = surface_placement(&sim, i) else {
            continue;
        };
        commands.spawn((
            Name::new(surface.name.clone()),
            SurfaceVisual(i),
            Transform::from_translation(centre).with_rotation(rotation),
            Visibility::default(),
            ChildOf(root),
        ));
    }
}

/// Keeps one body entity per body when bodies join the running scene (the
/// throw tool) or leave it (scrubbing back before a throw, a reset).
pub fn sync_body_entities(
    mut commands: Commands,
    sim: Res<Sim>,
    roots: Query<Entity, With<SceneRoot>>,
    bodies: Query<(Entity, &BodyVisual)>,
) {
    let Some(system) = rigid(&sim) else {
        return;
    };
    let Ok(root) = roots.single() else {
        return;
    };
    let count = system.bodies.len();
    let mut present = vec![false; count];
    let mut seen = 0;
    for (entity, body) in &bodies {
        seen += 1;
        match present.get_mut(body.0) {
            Some(slot) if !*slot => *slot = true,
            _ => commands.entity(entity).despawn(),
        }
    }
    if seen == count && present.iter().all(|&p| p) {
        return;
    }
    for (i, _) in present.iter().enumerate().filter(|(_, p)| !**p) {
        let (translation, rotation) = interpolated_pose(system, &sim.state.q, &sim.state.q, i, 1.0);
        commands.spawn((
            Name::new(system.bodies[i].name.clone()),
            BodyVisual(i),
            Transform::from_translation(translation).with_rotation(rotation),
            Visibility::default(),
            ChildOf(root),
        ));
    }
}

/// Keeps `Time<Fixed>` at `params.dt` and `Time<Virtual>` at the playback speed,
/// the pause state and the catch-up cap.
pub fn apply_time_settings(
    sim: Res<Sim>,
    mut control: ResMut<SimControl>,
    mut fixed: ResMut<Time<Fixed>>,
    mut virt: ResMut<Time<Virtual>>,
) {
    if let Some(step) = timestep_of(sim.params.dt)
        && fixed.timestep() != step
    {
        fixed.set_timestep(step);
    }
    let (lo, hi) = SPEED_RANGE;
    let speed = if control.speed.is_finite() {
        control.speed.clamp(lo, hi)
    } else {
        1.0
    };
    if control.speed != speed {
        control.speed = speed;
    }
    if virt.relative_speed_f64() != speed {
        virt.set_relative_speed_f64(speed);
    }
    if control.paused != virt.is_paused() {
        if control.paused {
            virt.pause();
        } else {
            virt.unpause();
        }
    }
    // Cap the virtual time a frame may add so that its steps cost at most the
    // frame budget: slow scenes then run slower than real time instead of
    // freezing the app while they catch up.
    let h = fixed.timestep().as_secs_f64();
    let cap = if control.step_cost > 0.0 {
        control.frame_budget * h / (speed * control.step_cost)
    } else {
        0.25
    };
    let cap = Duration::from_secs_f64(cap.clamp(0.002, 0.25));
    if virt.max_delta() != cap {
        virt.set_max_delta(cap);
    }
}

/// The `FixedUpdate` system: one step of size `params.dt` per fixed tick, on
/// the worker ([`StepJob`]). It waits for the step while the frame's budget
/// lasts; a step that takes longer is collected by a later frame
/// ([`collect_step`]) and no other starts meanwhile.
pub fn step_simulation(
    mut sim: ResMut<Sim>,
    mut previous: ResMut<PreviousState>,
    mut control: ResMut<SimControl>,
    mut history: ResMut<History>,
    mut job: ResMut<StepJob>,
    clock: Res<FrameClock>,
    mut compare: Option<ResMut<Compare>>,
) {
    if control.paused {
        return;
    }
    if !job.is_running() && at_duration(&sim) && (control.looping || !control.end_passed) {
        if control.looping {
            reset(
                &mut sim,
                &mut previous,
                &mut control,
                &mut history,
                compare.as_deref_mut(),
            );
        } else {
            control.paused = true;
            control.end_passed = true;
        }
        return;
    }
    if !job.is_running()
        && !begin(
            &sim,
            &mut control,
            &mut history,
            &mut job,
            compare.as_deref(),
        )
    {
        return;
    }
    let wait = clock.left(control.frame_budget);
    collect(
        &mut sim,
        &mut previous,
        &mut control,
        &mut history,
        &mut job,
        compare.as_deref_mut(),
        wait,
    );
}

/// Starts a step of `sim` on the worker, and of a comparison's run B after
/// it unless B has stopped, the plots ready to fork from it; a thread that
/// cannot start is the step's error. Returns whether it started.
fn begin(
    sim: &Simulation,
    control: &mut SimControl,
    history: &mut History,
    job: &mut StepJob,
    compare: Option<&Compare>,
) -> bool {
    history.prepare_fork(sim.state.t);
    let b = compare
        .filter(|c| c.steps_with_a())
        .map(|c| (&c.b, c.generation));
    match job.start(sim, b) {
        Ok(()) => true,
        Err(e) => {
            control.step_error = Some(e);
            false
        }
    }
}

/// Whether the simulation has reached its scene's duration (to half a step).
/// (An unusable h is the step's to refuse, with its message.)
pub fn at_duration(sim: &Simulation) -> bool {
    let h = sim.params.dt;
    timestep_of(h).is_some() && sim.state.t + 0.5 * h >= sim.params.duration
}

/// A single step requested while paused (the `.` key, the panel's button),
/// on the worker like every step.
pub fn single_step(
    mut sim: ResMut<Sim>,
    mut previous: ResMut<PreviousState>,
    mut control: ResMut<SimControl>,
    mut history: ResMut<History>,
    mut job: ResMut<StepJob>,
    mut compare: Option<ResMut<Compare>>,
) {
    if !control.step_once {
        return;
    }
    control.step_once = false;
    control.paused = true;
    // A step in flight is the one asked for.
    if job.is_running()
        || !begin(
            &sim,
            &mut control,
            &mut history,
            &mut job,
            compare.as_deref(),
        )
    {
        return;
    }
    let wait = Duration::from_secs_f64(control.frame_budget);
    collect(
        &mut sim,
        &mut previous,
        &mut control,
        &mut history,
        &mut job,
        compare.as_deref_mut(),
        wait,
    );
}

/// Before the fixed loop, every frame: installs a step the worker has
/// finished, and cancels one whose starting state is no longer shown (a
/// reset, a scrub, a reload or a throw replaced it).
pub fn collect_step(
    mut sim: ResMut<Sim>,
    mut previous: ResMut<PreviousState>,
    mut control: ResMut<SimControl>,
    mut history: ResMut<History>,
    mut job: ResMut<StepJob>,
    mut clock: ResMut<FrameClock>,
    mut compare: Option<ResMut<Compare>>,
) {
    clock.0 = Instant::now();
    if !job.is_running() {
        return;
    }
    if !job.started_from(&sim) {
        job.cancel();
        return;
    }
    collect(
        &mut sim,
        &mut previous,
        &mut control,
        &mut history,
        &mut job,
        compare.as_deref_mut(),
        Duration::ZERO,
    );
}

/// Waits up to `wait` for the worker's step and installs it into the shown
/// simulation, with the parameters, the hand and the settings edited while
/// it ran, and a comparison's run B stepped after it. Returns whether a
/// step was installed.
fn collect(
    sim: &mut Simulation,
    previous: &mut PreviousState,
    control: &mut SimControl,
    history: &mut History,
    job: &mut StepJob,
    compare: Option<&mut Compare>,
    wait: Duration,
) -> bool {
    match job.wait(wait) {
        None => false,
        Some(Err(message)) => {
            control.paused = true;
            control.halt = Some(message);
            false
        }
        Some(Ok(finished)) => {
            let mut stepped = finished.simulation;
            stepped.params.clone_from(&sim.params);
            *stepped.step_settings_mut() = *sim.step_settings();
            if stepped.perturbation() != sim.perturbation() {
                let _ = stepped.set_perturbation(sim.perturbation().cloned());
            }
            let before = std::mem::replace(sim, stepped).state.q;
            let paused = control.paused;
            let mut outcome = finished.outcome;
            if let Some(b) = &finished.b {
                // The frame budget pays for the slower of the two runs,
                // which step side by side.
                outcome.cost = outcome
                    .cost
                    .max(b.outcomes.iter().map(|o| o.cost).sum::<f64>());
            }
            let settled = settle(sim, previous, control, history, before, outcome);
            if let (Some(compare), Some(b)) = (compare, finished.b) {
                compare.install(b, sim, paused);
            }
            settled
        }
    }
}

/// What a step gave, taken apart from the simulation it advanced so that
/// the worker can hand it over.
#[derive(Debug, Clone)]
pub struct StepOutcome {
    /// The step's status and plot sample, or why it was refused.
    result: Result<(crate::lcp::LcpStatus, Sample), String>,
    /// Wall-clock seconds it took.
    cost: f64,
}

impl StepOutcome {
    /// A step that did not run: `message` says why.
    pub fn failed(message: &str) -> Self {
        Self {
            result: Err(message.to_owned()),
            cost: 0.0,
        }
    }

    /// Whether the step advanced the state.
    pub fn advanced(&self) -> bool {
        matches!(&self.result, Ok((status, _)) if status.advances())
    }

    /// The step's status and plot sample, or why it was refused.
    pub fn result(&self) -> &Result<(crate::lcp::LcpStatus, Sample), String> {
        &self.result
    }
}

/// Takes one step of `sim` (on whichever thread).
pub fn take_step(sim: &mut Simulation) -> StepOutcome {
    let start = Instant::now();
    let result = sim
        .step()
        .map(|r| {
            (
                r.status,
                Sample {
                    t: r.t,
                    kinetic: r.kinetic_energy,
                    potential: r.potential_energy,
                    active_contacts: r.active_contacts(),
                    lcp_size: r.lcp_size,
                    pivots: r.pivots,
                    step_ms: r.timings.total.as_secs_f64() * 1e3,
                    sweeps: r.sweeps,
                    residual: r.residual,
                    min_gap: r.min_gap,
                },
            )
        })
        .map_err(|e| e.to_string());
    StepOutcome {
        result,
        cost: start.elapsed().as_secs_f64(),
    }
}

/// Takes one step on this thread (recording, tests); a step whose LCP is not
/// solved pauses the simulation. Returns whether the state advanced.
pub fn advance(
    sim: &mut Simulation,
    previous: &mut PreviousState,
    control: &mut SimControl,
    history: &mut History,
) -> bool {
    let before = sim.state.q.clone();
    history.prepare_fork(sim.state.t);
    let outcome = take_step(sim);
    settle(sim, previous, control, history, before, outcome)
}

/// Books a step taken from configuration `before`: the step cost, the
/// history and the timeline, or the halt. Returns whether the state
/// advanced.
fn settle(
    sim: &mut Simulation,
    previous: &mut PreviousState,
    control: &mut SimControl,
    history: &mut History,
    before: DVector<f64>,
    outcome: StepOutcome,
) -> bool {
    let cost = outcome.cost;
    control.step_cost = if control.step_cost > 0.0 {
        0.9 * control.step_cost + 0.1 * cost
    } else {
        cost
    };
    match outcome.result {
        Ok((status, sample)) if status.advances() => {
            // Paused (a single step): show the new state, not a pose
            // between the last two.
            previous.q = if control.paused {
                sim.state.q.clone()
            } else {
                before
            };
            control.step_error = None;
            history.timeline.record(sim);
            history.record(Sample {
                t: sim.state.t,
                ..sample
            });
            true
        }
        Ok((status, _)) => {
            previous.q.clone_from(&sim.state.q);
            control.paused = true;
            control.halt = Some(sim.failure_message().unwrap_or_else(|| {
                format!(
                    "step at t = {:.4} s: {}: {}",
                    sim.state.t,
                    status.name(),
                    status.reason()
                )
            }));
            false
        }
        Err(e) => {
            previous.q.clone_from(&sim.state.q);
            control.step_error = Some(e);
            false
        }
    }
}

/// Copies each body's pose, interpolated between the previous and the current
/// state by the fixed-time overstep fraction, into its `Transform`.
pub fn sync_body_transforms(
    sim: Res<Sim>,
    previous: Res<PreviousState>,
    fixed: Res<Time<Fixed>>,
    mut bodies: Query<(&BodyVisual, &mut Transform)>,
) {
    let Some(system) = rigid(&sim) else {
        return;
    };
    let alpha = fixed.overstep_fraction_f64().clamp(0.0, 1.0);
    for (body, mut transform) in &mut bodies {
        if body.0 >= system.bodies.len() {
            continue;
        }
        let (translation, rotation) =
            interpolated_pose(system, &previous.q, &sim.state.q, body.0, alpha);
        if !(translation.is_finite() && rotation.is_finite()) {
            continue;
        }
        transform.translation = translation;
        transform.rotation = rotation;
    }
}

#[derive(Default)]
struct RateMeter {
    real: f64,
    simulated: f64,
    last_t: Option<f64>,
}

/// Simulated seconds per wall-clock second, averaged over half a second.
/// (Sim time that jumps back, after a reset or a reload, is not counted.)
fn measure_real_time_factor(
    real: Res<Time<Real>>,
    sim: Res<Sim>,
    mut control: ResMut<SimControl>,
    mut meter: Local<RateMeter>,
) {
    let t = sim.state.t;
    if let Some(last) = meter.last_t
        && t >= last
    {
        meter.simulated += t - last;
    }
    meter.last_t = Some(t);
    meter.real += real.delta_secs_f64();
    // Every half second; the first estimate sooner.
    if meter.real >= 0.5 || (control.real_time_factor.is_none() && meter.real >= 0.1) {
        control.real_time_factor = Some(meter.simulated / meter.real);
        meter.real = 0.0;
        meter.simulated = 0.0;
    }
}

/// Back to the initial state (parameters are kept), a comparison's run B
/// with it.
pub fn reset(
    sim: &mut Simulation,
    previous: &mut PreviousState,
    control: &mut SimControl,
    history: &mut History,
    compare: Option<&mut Compare>,
) {
    if let Some(compare) = compare {
        compare.reset();
    }
    sim.reset();
    previous.q.clone_from(&sim.state.q);
    if control.halt.is_some() {
        // Paused by a failed step, not by the user: start running again.
        control.paused = false;
    }
    control.halt = None;
    control.step_error = None;
    control.step_once = false;
    control.end_passed = false;
    history.restart(sim);
}

/// [`reset`] as a system (for `World::run_system_once`).
pub fn reset_simulation(
    mut sim: ResMut<Sim>,
    mut previous: ResMut<PreviousState>,
    mut control: ResMut<SimControl>,
    mut history: ResMut<History>,
    mut compare: Option<ResMut<Compare>>,
) {
    reset(
        &mut sim,
        &mut previous,
        &mut control,
        &mut history,
        compare.as_deref_mut(),
    );
}

/// Replaces the running simulation (another scene, or the same file
/// reloaded), with a comparison's run B or none.
pub fn install(world: &mut World, simulation: Simulation, compare: Option<Compare>) {
    match compare {
        Some(compare) => world.insert_resource(compare),
        None => {
            world.remove_resource::<Compare>();
        }
    }
    world.insert_resource(PreviousState {
        q: simulation.state.q.clone(),
    });
    world.resource_mut::<History>().restart(&simulation);
    world.insert_resource(Sim(simulation));
    {
        let mut control = world.resource_mut::<SimControl>();
        if control.halt.is_some() {
            control.paused = false;
        }
        control.halt = None;
        control.step_error = None;
        control.step_once = false;
        control.step_cost = 0.0;
        control.end_passed = false;
    }
    world.resource_mut::<SceneEpoch>().0 += 1;
}
