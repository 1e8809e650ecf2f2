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

mod legacy;

pub use legacy::SavedMemory;

use super::Simulation;
use crate::model::Model;
use crate::scene::{self, BodySpec, SceneError};
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

    /// Reads a snapshot file; errors name the file, line, column and field.
    pub fn load(path: &Path) -> Result<(Self, String), SceneError> {
        let source = std::fs::read_to_string(path).map_err(|source| SceneError::Io {
            path: path.to_owned(),
            source,
        })?;
        let snapshot = Self::parse(&source, path)?;
        Ok((snapshot, source))
    }

    /// Parses snapshot text; `path` names it in errors.
    pub fn parse(source: &str, path: &Path) -> Result<Self, SceneError> {
        let source = source.strip_prefix('\u{feff}').unwrap_or(source);
        ron::Options::default()
            .with_default_extension(ron::extensions::Extensions::IMPLICIT_SOME)
            .from_str(source)
            .map_err(|e| scene::ron_error(&e, path))
    }

    /// Puts the snapshot into `sim`, a simulation of the same scene: its
    /// added bodies join the model, and the state, step count and the
    /// stepper's memory become the snapshot's. `source` is the snapshot's
    /// text and `path` its file, for errors. On error `sim` is unchanged.
    pub fn apply(&self, sim: &mut Simulation, source: &str, path: &Path) -> Result<(), SceneError> {
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
        if !self.t.is_finite() {
            return Err(error(
                &["t"],
                "t",
                format!("must be finite, found {}", self.t),
            ));
        }
        next.state.q = nalgebra::DVector::from_column_slice(&self.q);
        next.state.v = nalgebra::DVector::from_column_slice(&self.v);
        next.state.t = self.t;
        next.steps = self.steps;
        next.last = None;
        next.added = Arc::new(self.bodies.clone());
        match &self.steppers {
            Some(saved) => next
                .stepper
                .restore(saved.clone().into_memory(next.params.stepper)),
            None => next.stepper.clear(),
        }
        *sim = next;
        Ok(())
    }
}

/// Reads the snapshot file at `path` into `sim` (see [`Snapshot::apply`]).
pub fn load_into(sim: &mut Simulation, path: &Path) -> Result<(), SceneError> {
    let (snapshot, source) = Snapshot::load(path)?;
    snapshot.apply(sim, &source, path)
}
