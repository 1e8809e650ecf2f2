//! Snapshot files: the state of a running simulation written as RON, to
//! start `contactlab run SCENE --state SNAPSHOT` or the viewer from.
//!
//! A snapshot holds t, the step count, q and v (every float written in
//! Rust's shortest round-trip form, so it reads back to the same bits), the
//! bodies added while running (thrown ones, appended to the scene's own), and
//! the stepper's memory between steps (the scheme, its active set, warm-start
//! bases by contact identity, last impulses, regularization levels). With
//! that memory a run started from the snapshot with the same parameters
//! continues **bit-identically**: every later CSV row equals, character for
//! character, the row the original run wrote at that step (`tests/hands.rs`
//! checks it). Without it (`steppers` omitted, e.g. a hand-written snapshot)
//! the stepper starts cold, as from a scene file. Snapshots written before the
//! one step pipeline kept one section per stepper; they still load
//! ([`legacy`]), with the memory of the stepper the parameters choose.
//!
//! Parameters are not part of a snapshot: they come from the scene and the
//! command line, as always.
//!
//! A snapshot is checked as a scene is: the same size cap and magnitude rule
//! on its text, the same overlap tolerance on its state (under Moreau–Jean,
//! up to the overlaps its own steps leave: twice its guards' depth of each
//! pair, so that a granular run's state reloads), unit quaternions, fixed
//! bodies where the scene holds them, a time t ≥ 0; a stepper memory that
//! does not fit its own layout is dropped, with a note, for a cold start.

mod legacy;

pub use legacy::SavedMemory;

use super::Simulation;
use crate::model::rigid::{position_size, velocity_size};
use crate::model::{Dimension, Model};
use crate::params::StepperKind;
use crate::scene::{self, BodySpec, SceneError, overlap};
use crate::stepper::moreau_jean::kept_overlap;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::Arc;

/// The contents of a snapshot file.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Snapshot")]
pub struct Snapshot {
    /// The name of the scene it was taken in (it loads only into that scene).
    pub scene: String,
    /// Simulation time, s.
    pub t: f64,
    /// Steps taken to get there.
    #[serde(default)]
    pub steps: u64,
    /// Generalized coordinates (as in [`crate::model::State::q`]).
    pub q: Vec<f64>,
    /// Generalized velocities (as in [`crate::model::State::v`]).
    pub v: Vec<f64>,
    /// Bodies added while running, appended to the scene file's own.
    #[serde(default)]
    pub bodies: Vec<BodySpec>,
    /// The stepper's memory; omitted: a cold start.
    #[serde(default)]
    pub steppers: Option<SavedMemory>,
}

impl Snapshot {
    /// The simulation's current state and memory.
    pub fn of(sim: &Simulation) -> Self {
        Self {
            scene: sim.scene.name.clone(),
            t: sim.state.t,
            steps: sim.steps,
            q: sim.state.q.iter().copied().collect(),
            v: sim.state.v.iter().copied().collect(),
            bodies: sim.added_bodies().to_vec(),
            steppers: Some(SavedMemory::Pipeline(Box::new(
                sim.stepper_memory().clone(),
            ))),
        }
    }

    /// The snapshot as RON text.
    pub fn to_ron(&self) -> Result<String, String> {
        let config = ron::ser::PrettyConfig::new()
            .struct_names(true)
            .extensions(ron::extensions::Extensions::IMPLICIT_SOME);
        ron::ser::to_string_pretty(self, config).map_err(|e| e.to_string())
    }

    /// Writes the snapshot to `path` (under a temporary name, then renamed, so
    /// a failed write leaves nothing half written).
    pub fn save(&self, path: &Path) -> Result<(), String> {
        let text = self.to_ron()?;
        crate::atomic_file::write(path, &text)
    }

    /// Reads a snapshot file (at most [`scene::MAX_SCENE_BYTES`]); errors
    /// name the file, line, column and field.
    pub fn load(path: &Path) -> Result<(Self, String), SceneError> {
        let source = scene::read_text(path, "snapshot")?;
        let snapshot = Self::parse(&source, path)?;
        Ok((snapshot, source))
    }

    /// Parses snapshot text, with the scenes' magnitude rule on every
    /// number; `path` names it in errors.
    pub fn parse(source: &str, path: &Path) -> Result<Self, SceneError> {
        let source = source.strip_prefix('\u{feff}').unwrap_or(source);
        let snapshot = ron::Options::default()
            .with_default_extension(ron::extensions::Extensions::IMPLICIT_SOME)
            .from_str(source)
            .map_err(|e| scene::ron_error(&e, path))?;
        scene::check_magnitudes(source, path)?;
        Ok(snapshot)
    }

    /// Puts the snapshot into `sim`, a simulation of the same scene: its
    /// added bodies join the model, and the state, step count and the
    /// stepper's memory become the snapshot's. `source` is the snapshot's
    /// text and `path` its file, for errors. On error `sim` is unchanged.
    /// `Ok(Some(note))`: the state was taken and the memory dropped, for the
    /// reason the note gives.
    pub fn apply(
        &self,
        sim: &mut Simulation,
        source: &str,
        path: &Path,
    ) -> Result<Option<String>, SceneError> {
        let error = |anchors: &[&str], field: &str, message: String| {
            scene::invalid_at(source, path, anchors, field, message)
        };
        if self.scene != sim.scene.name {
            return Err(error(
                &["scene"],
                "scene",
                format!(
                    "the snapshot was taken in scene `{}`, not `{}` ({})",
                    self.scene,
                    sim.scene.name,
                    sim.scene.path.display()
                ),
            ));
        }
        let mut next = sim.clone();
        next.reset();
        for (k, spec) in self.bodies.iter().enumerate() {
            next.scene.add_body(spec, k, source, path)?;
        }
        let (config, dof) = match next.model() {
            Model::Rigid(s) => (s.config_size(), s.dof()),
            Model::Linear(s) => (s.dof(), s.dof()),
        };
        for (values, field, len) in [(&self.q, "q", config), (&self.v, "v", dof)] {
            if values.len() != len {
                return Err(error(
                    &[field],
                    field,
                    format!(
                        "has {} entries; the scene with {} added bodies needs {len}",
                        values.len(),
                        self.bodies.len()
                    ),
                ));
            }
            if let Some(x) = values.iter().find(|x| !x.is_finite()) {
                return Err(error(&[field], field, format!("must be finite, found {x}")));
            }
        }
        if !(self.t.is_finite() && self.t >= 0.0) {
            return Err(error(
                &["t"],
                "t",
                format!("must be a time of at least 0 s, found {}", self.t),
            ));
        }
        let scene_state = next.state.clone();
        next.state.q = nalgebra::DVector::from_column_slice(&self.q);
        next.state.v = nalgebra::DVector::from_column_slice(&self.v);
        next.state.t = self.t;
        if let Model::Rigid(s) = next.model() {
            let (pq, pv) = (position_size(s.dimension), velocity_size(s.dimension));
            for i in 0..s.bodies.len() {
                let name = &s.bodies[i].name;
                if s.dimension == Dimension::Spatial {
                    let norm = next.state.q.rows(i * pq + 3, 4).norm();
                    if (norm - 1.0).abs() > QUATERNION_NORM {
                        return Err(error(
                            &["q"],
                            "q",
                            format!(
                                "body `{name}`'s orientation quaternion (entries {}–{}) has norm {norm}, not 1",
                                i * pq + 3,
                                i * pq + 6
                            ),
                        ));
                    }
                }
                if s.is_fixed(i) {
                    let moved = |a: &nalgebra::DVector<f64>, b: &nalgebra::DVector<f64>, at, n| {
                        (at..at + n)
                            .any(|k: usize| (a[k] - b[k]).abs() > 1e-12 * (1.0 + b[k].abs()))
                    };
                    for (field, at, n, now, then) in [
                        ("q", i * pq, pq, &next.state.q, &scene_state.q),
                        ("v", i * pv, pv, &next.state.v, &scene_state.v),
                    ] {
                        if moved(now, then, at, n) {
                            return Err(error(
                                &[field],
                                field,
                                format!(
                                    "body `{name}` is fixed: its entries {at}–{} must be the scene's ({})",
                                    at + n - 1,
                                    if field == "q" {
                                        "where the scene places it"
                                    } else {
                                        "at rest"
                                    }
                                ),
                            ));
                        }
                    }
                }
            }
        }
        if !next.scene.file.allow_initial_overlap
            && let Some(found) = deepest_overlap(&next)
        {
            let (_, _, message) = overlap::describe(next.model(), &found);
            return Err(error(
                &["q"],
                "q",
                format!("in the snapshot's state, {message}"),
            ));
        }
        next.steps = self.steps;
        next.last = None;
        next.added = Arc::new(self.bodies.clone());
        let mut note = None;
        match &self.steppers {
            Some(saved) => {
                let memory = saved.clone().into_memory(next.params.stepper);
                if memory.is_consistent() {
                    next.stepper.restore(memory);
                } else {
                    next.stepper.clear();
                    note = Some(format!(
                        "{}: the stepper memory (`steppers`) does not fit its own layout; starting cold from the snapshot's state",
                        path.display()
                    ));
                }
            }
            None => next.stepper.clear(),
        }
        *sim = next;
        Ok(note)
    }
}

/// The deepest overlap of `sim`'s state beyond what its scheme leaves: a
/// state that Moreau–Jean's steps left holds overlaps up to its guards'
/// depth ([`kept_overlap`]); any other scheme's, the scene's tolerance
/// ([`overlap::tolerance`]).
fn deepest_overlap(sim: &Simulation) -> Option<overlap::Overlap> {
    let (model, state, edges) = (sim.model(), &sim.state, sim.params.edges);
    let kept = match sim.params.stepper {
        StepperKind::MoreauJean => kept_overlap(model, sim.step_settings()),
        _ => None,
    };
    match kept {
        Some(kept) => overlap::deepest_beyond(model, state, edges, kept),
        None => overlap::deepest(model, state, edges),
    }
}

/// How far from 1 a snapshot's quaternion norm may be: written snapshots
/// hold unit quaternions to rounding.
const QUATERNION_NORM: f64 = 1e-9;

/// Reads the snapshot file at `path` into `sim` (see [`Snapshot::apply`]).
pub fn load_into(sim: &mut Simulation, path: &Path) -> Result<Option<String>, SceneError> {
    let (snapshot, source) = Snapshot::load(path)?;
    snapshot.apply(sim, &source, path)
}
