//! Compare mode, headless half: a comparison file
//! ([`crate::scene::comparison`]) opened in the viewer runs its scene twice.
//! Run A is the shown [`super::Sim`] (the panel, the hands and the timeline act on
//! it); run B is [`Compare::b`], stepped on a worker thread of its own
//! beside each of A's steps, up to A's new time
//! ([`super::worker::StepJob::start`]), so that
//! the two keep one clock: with the same h they take the same steps at the
//! same fixed ticks. B's bodies are drawn as a translucent
//! ghost over A's ([`GhostBody`]), or beside them in a pane of their own
//! ([`super::split`]); the panel's side is in [`super::compare_panel`].
//! The hands act on both runs ([`super::hands`]), the inspector shows both,
//! and the history scrubs both ([`Compare::follow`]).

use super::sim::{History, SceneRoot, StepOutcome, interpolated_pose, rigid};
use super::worker::{StepsOfB, step_to};
use crate::cli::{Overrides, apply_overrides, divergence};
use crate::params::Params;
use crate::scene::comparison::{CompareView, Comparison, is_comparison_file, load_comparison};
use crate::sim::Simulation;
use bevy::prelude::*;
use nalgebra::DVector;
use std::collections::VecDeque;
use std::path::Path;

/// Run B of an open comparison and what the panel shows of it.
#[derive(Resource, Debug, Clone)]
pub struct Compare {
    /// The comparison's display name.
    pub name: String,
    /// What it shows (one paragraph).
    pub description: String,
    /// Run B: the scene with the comparison's `b` parameters. The panel
    /// edits `b.params` in place, as it edits A's.
    pub b: Simulation,
    /// B's configuration before its last step, for drawing poses between
    /// steps.
    pub previous_q: DVector<f64>,
    /// B's plot samples, bounded in time and points as A's, and its
    /// checkpoints, which the history's scrubber restores with A's
    /// ([`Self::follow`]).
    pub history: History,
    /// The divergence after each step: (t in s, the largest distance between
    /// a body in A and the same body in B in m), over the plots' window and
    /// at most [`History::MAX_POINTS`] points (the largest of steps closer
    /// together).
    pub divergence: VecDeque<[f64; 2]>,
    /// Why B stopped (a step whose LCP was not solved); A runs on.
    pub halt: Option<String>,
    /// B's last step error (invalid parameters); cleared by its next good
    /// step.
    pub step_error: Option<String>,
    /// How the two runs are shown: B as a ghost over A, or side by side
    /// ([`super::split`]); the comparison file's `view`, switched in the
    /// panel.
    pub view: CompareView,
    /// Counts B's resets and restarts: steps of B taken on the worker from
    /// an earlier generation are dropped.
    pub generation: u64,
}

impl Compare {
    /// Run B of `comparison`: the simulation `b`, from its state.
    pub fn new(comparison: &Comparison, b: Simulation) -> Self {
        let mut history = History::default();
        history.restart(&b);
        Self {
            name: comparison.name.clone(),
            description: comparison.description.clone(),
            previous_q: b.state.q.clone(),
            b,
            history,
            divergence: VecDeque::new(),
            halt: None,
            step_error: None,
            view: comparison.view,
            generation: 0,
        }
    }

    /// Run B started beside the shown run `a` (the panel's "compare"
    /// toggle on a scene): a copy of A as it is now, its parameters,
    /// stepper memory and all, so that B equals A until an edit sets it
    /// apart.
    pub fn of_run(a: &Simulation) -> Self {
        let comparison = Comparison {
            name: format!("{}: A against B", a.scene.name),
            description: format!(
                "Run B started as a copy of A at t = {:.3} s; edit B's parameters below",
                a.state.t
            ),
            path: a.scene.path.clone(),
            scene: a.scene.clone(),
            a: a.params.clone(),
            b: a.params.clone(),
            view: CompareView::default(),
        };
        Self::new(&comparison, a.clone())
    }

    /// Whether B takes a step with A's next one (it has not stopped).
    pub fn steps_with_a(&self) -> bool {
        self.halt.is_none()
    }

    /// Back to B's initial state (its parameters are kept), with A's reset.
    pub fn reset(&mut self) {
        self.b.reset();
        self.forget_past();
    }

    /// B from A's current state (its time, configuration, velocities and
    /// any thrown bodies), with B's own parameters, perturbation and
    /// settings and a cold stepper: what an edit of B's stepper, contact
    /// solver or step size does ([`super::compare_panel`]), so that from
    /// then on the divergence is that of the two settings alone. B's plot
    /// series and divergence start again there.
    pub fn restart_from(&mut self, a: &Simulation) {
        self.b.restore(&a.checkpoint());
        self.b.clear_caches();
        self.forget_past();
    }

    /// Applies `edit` to B's parameters; when it changed B's stepper,
    /// contact solver, friction cone or step size, B restarts from A's
    /// current state ([`Self::restart_from`]). Other edits (μ, e, k, the
    /// solver's tolerances) apply from B's next step, as A's do.
    pub fn edit_b(&mut self, a: &Simulation, edit: impl FnOnce(&mut Params)) {
        let before = self.b.params.clone();
        edit(&mut self.b.params);
        let after = &self.b.params;
        let restarts = after.stepper != before.stepper
            || after.solver != before.solver
            || after.friction_cone != before.friction_cone
            || after.dt.to_bits() != before.dt.to_bits();
        if restarts {
            self.restart_from(a);
        }
    }

    fn forget_past(&mut self) {
        self.previous_q.clone_from(&self.b.state.q);
        self.history.restart(&self.b);
        self.divergence.clear();
        self.halt = None;
        self.step_error = None;
        self.generation += 1;
    }

    /// Installs B's steps taken by the worker after A's (`a` is A, already
    /// one step on): the parameters edited while they ran win, and their
    /// samples and the divergence are booked. Steps of an earlier
    /// generation (B restarted meanwhile) are dropped. `paused`: a single
    /// step, shown without interpolation.
    pub fn install(&mut self, steps: StepsOfB, a: &Simulation, paused: bool) {
        if steps.generation != self.generation {
            return;
        }
        let before = match steps.simulation {
            Some(mut stepped) => {
                stepped.params.clone_from(&self.b.params);
                *stepped.step_settings_mut() = *self.b.step_settings();
                std::mem::replace(&mut self.b, stepped).state.q
            }
            None => self.b.state.q.clone(),
        };
        self.book(&steps.outcomes, before, a, paused);
    }

    /// Books B's steps to A's time, taken from configuration `before`: its
    /// plot samples, checkpoint and divergence, or its stop.
    fn book(
        &mut self,
        outcomes: &[StepOutcome],
        before: DVector<f64>,
        a: &Simulation,
        paused: bool,
    ) {
        let mut failed = false;
        for outcome in outcomes {
            match outcome.result() {
                Ok((status, sample)) if status.advances() => {
                    self.history.record(*sample);
                }
                Ok((status, _)) => {
                    failed = true;
                    self.halt = Some(self.b.failure_message().unwrap_or_else(|| {
                        format!(
                            "step at t = {:.4} s: {}: {}",
                            self.b.state.t,
                            status.name(),
                            status.reason()
                        )
                    }));
                }
                Err(e) => {
                    failed = true;
                    self.step_error = Some(e.clone());
                }
            }
        }
        if failed {
            self.previous_q.clone_from(&self.b.state.q);
            return;
        }
        self.previous_q = if paused {
            self.b.state.q.clone()
        } else {
            before
        };
        self.step_error = None;
        self.history.timeline.record(&self.b);
        if let Some(d) = self.divergence_from(a) {
            self.record_divergence(a.state.t, d);
        }
    }

    /// Steps B to A's time on this thread (a recording's frame-exact
    /// steps), as the worker does beside A's step; `a` has just advanced.
    pub fn advance_to(&mut self, a: &Simulation) {
        if !self.steps_with_a() {
            return;
        }
        let before = self.b.state.q.clone();
        let outcomes = step_to(&mut self.b, a.state.t, &std::sync::Arc::default());
        self.book(&outcomes, before, a, true);
    }

    /// After A was scrubbed to a checkpoint of its timeline (or a state was
    /// loaded into it): B goes to its own checkpoint at A's time, or, when
    /// its timeline does not reach back that far (or differs from A's in
    /// bodies), restarts from A's state ([`Self::restart_from`]). B's stop
    /// is forgotten: it runs again from there.
    pub fn follow(&mut self, a: &Simulation) {
        let t = a.state.t;
        let timeline = &self.history.timeline;
        let reaches = timeline.index_at(t).filter(|&i| {
            timeline.get(i).is_some_and(|c| {
                (c.t() - t).abs() <= 0.5 * self.b.params.dt.abs()
                    && c.state.q.len() == a.state.q.len()
            })
        });
        match reaches {
            Some(i) => {
                self.history.timeline.scrub(i, &mut self.b);
                self.previous_q.clone_from(&self.b.state.q);
                self.history.samples.retain(|s| s.t <= t);
                self.divergence.retain(|p| p[0] <= t);
                self.halt = None;
                self.step_error = None;
            }
            None => self.restart_from(a),
        }
    }

    /// Adds a thrown body to B as it was added to A (the same spec), so that
    /// the throw hits both runs alike.
    pub fn throw(&mut self, spec: crate::scene::BodySpec) -> Result<(), String> {
        self.b.add_body(spec).map_err(|e| format!("run B: {e}"))?;
        self.previous_q.clone_from(&self.b.state.q);
        self.history.timeline.record(&self.b);
        Ok(())
    }

    /// Adds the divergence `d` at time `t`, as [`History::record`] adds a
    /// sample.
    fn record_divergence(&mut self, t: f64, d: f64) {
        let window = self.history.window;
        let spacing = window / History::MAX_POINTS as f64;
        match self.divergence.back_mut() {
            Some(last) if t >= last[0] && t - last[0] < spacing => {
                last[1] = last[1].max(d);
            }
            _ => self.divergence.push_back([t, d]),
        }
        while self
            .divergence
            .front()
            .is_some_and(|p| p[0] < t - window || p[0] > t)
        {
            self.divergence.pop_front();
        }
    }

    /// The largest distance between a body in A and the same body in B, m
    /// ([`crate::cli::divergence`], as `contactlab compare`); none when A has bodies B has
    /// not (a throw).
    pub fn divergence_from(&self, a: &Simulation) -> Option<f64> {
        (a.state.q.len() == self.b.state.q.len())
            .then(|| divergence(a.model(), &a.state, &self.b.state).0)
    }
}

/// Loads a scene file, or a comparison file as run A and [`Compare`] (run
/// B); the command line's overrides apply to both sides, and each side's
/// parameters are checked as `contactlab compare` checks them.
pub fn load_scene_or_comparison(
    path: &Path,
    overrides: &Overrides,
) -> Result<(Simulation, Option<Compare>), String> {
    if !is_comparison_file(path) {
        return super::load_simulation(path, overrides).map(|a| (a, None));
    }
    let (a, compare) = load_comparison_with(path, overrides, ["", ""], None)?;
    Ok((a, Some(compare)))
}

/// A comparison from the command line (`record --compare`): a comparison
/// file, or a scene run twice, with `overrides` over both sides and then
/// each side's `KEY=VALUE,...` list (`sides`: `--a`, `--b`, as `contactlab
/// compare` reads them) over its own; `view` over the file's.
pub fn load_comparison_with(
    path: &Path,
    overrides: &Overrides,
    sides: [&str; 2],
    view: Option<CompareView>,
) -> Result<(Simulation, Compare), String> {
    let mut comparison = if is_comparison_file(path) {
        load_comparison(path).map_err(|e| e.to_string())?
    } else {
        let scene = crate::scene::load(path).map_err(|e| e.to_string())?;
        Comparison {
            name: scene.name.clone(),
            description: String::new(),
            path: path.to_owned(),
            a: scene.params.clone(),
            b: scene.params.clone(),
            scene,
            view: CompareView::default(),
        }
    };
    if let Some(view) = view {
        comparison.view = view;
    }
    let side = |label: &str, base: &Params, spec: &str| -> Result<Simulation, String> {
        let own = crate::cli::parse_side(&format!("--{}", label.to_lowercase()), spec)?;
        // The side's parameters as the scene's own, for the overrides to
        // apply over and be checked against, as the CLI does.
        let mut scene = comparison.scene.clone();
        scene.params = base.clone();
        let params = apply_overrides(&scene, overrides).map_err(|e| format!("run {label}: {e}"))?;
        scene.params = params;
        let params = apply_overrides(&scene, &own).map_err(|e| format!("run {label}: {e}"))?;
        for warning in params.warnings() {
            eprintln!("contactlab: run {label}: {warning}");
        }
        let mut simulation = Simulation::with_params(scene, params);
        overrides.apply_settings(simulation.step_settings_mut());
        own.apply_settings(simulation.step_settings_mut());
        Ok(simulation)
    };
    let a = side("A", &comparison.a, sides[0])?;
    let b = side("B", &comparison.b, sides[1])?;
    Ok((a, Compare::new(&comparison, b)))
}

/// An entity drawing body `.0` of run B, a translucent ghost over A's; its
/// `Transform` is the body's pose in physics coordinates (relative to the
/// [`SceneRoot`]).
#[derive(Component, Debug, Clone, Copy, PartialEq, Eq)]
pub struct GhostBody(pub usize);

/// Keeps one ghost per moving body of B under the scene's root (fixed
/// bodies are the same in both runs), and none without a comparison.
pub fn sync_ghost_entities(
    mut commands: Commands,
    compare: Option<Res<Compare>>,
    roots: Query<Entity, With<SceneRoot>>,
    ghosts: Query<(Entity, &GhostBody, &ChildOf)>,
) {
    let root = roots.single().ok();
    let system = compare.as_deref().and_then(|c| rigid(&c.b).map(|s| (c, s)));
    let Some(((compare, system), root)) = system.zip(root) else {
        for (entity, _, _) in &ghosts {
            commands.entity(entity).despawn();
        }
        return;
    };
    let wanted = |i: usize| i < system.bodies.len() && !system.is_fixed(i);
    let mut present = vec![false; system.bodies.len()];
    for (entity, ghost, parent) in &ghosts {
        let slot = present.get_mut(ghost.0).filter(|p| !**p);
        match slot {
            Some(slot) if wanted(ghost.0) && parent.parent() == root => *slot = true,
            _ => commands.entity(entity).despawn(),
        }
    }
    for i in (0..system.bodies.len()).filter(|&i| wanted(i) && !present[i]) {
        let q = &compare.b.state.q;
        let (translation, rotation) = interpolated_pose(system, q, q, i, 1.0);
        commands.spawn((
            Name::new(format!("B: {}", system.bodies[i].name)),
            GhostBody(i),
            Transform::from_translation(translation).with_rotation(rotation),
            Visibility::default(),
            ChildOf(root),
        ));
    }
}

/// Copies each of B's body poses, interpolated as A's are, into its ghost's
/// `Transform`.
pub fn sync_ghost_transforms(
    compare: Option<Res<Compare>>,
    fixed: Res<Time<Fixed>>,
    mut ghosts: Query<(&GhostBody, &mut Transform)>,
) {
    let Some(compare) = compare else {
        return;
    };
    let Some(system) = rigid(&compare.b) else {
        return;
    };
    let alpha = fixed.overstep_fraction_f64().clamp(0.0, 1.0);
    for (ghost, mut transform) in &mut ghosts {
        if ghost.0 >= system.bodies.len() {
            continue;
        }
        let (translation, rotation) = interpolated_pose(
            system,
            &compare.previous_q,
            &compare.b.state.q,
            ghost.0,
            alpha,
        );
        if translation.is_finite() && rotation.is_finite() {
            transform.translation = translation;
            transform.rotation = rotation;
        }
    }
}
