//! The stepper memory a snapshot holds, in this version's form or in the
//! form written before the one step pipeline: one section per stepper
//! (`Steppers(stewart_trinkle: …, moreau_jean: …, anitescu_potra: …,
//! euler_lcp: …)`), each with its own active set and warm starts. An old
//! snapshot loads with the memory of the stepper the parameters choose, so a
//! run from it continues as the old version continued it.

use crate::model::ContactId;
use crate::params::StepperKind;
use crate::solver::{ContactSolver, Form, LastImpulses, WarmStart};
use crate::stepper::StepperMemory;
use crate::stepper::step::ActiveSet;
use rustc_hash::FxHashMap as HashMap;
use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// The stepper's memory in a snapshot file.
#[derive(Debug, Clone)]
pub enum SavedMemory {
    /// This version's: [`StepperMemory`].
    Pipeline(Box<StepperMemory>),
    /// Written before the one step pipeline: every stepper's own memory.
    PerStepper(Box<Steppers>),
}

impl SavedMemory {
    /// The memory to continue with under `stepper`.
    pub fn into_memory(self, stepper: StepperKind) -> StepperMemory {
        match self {
            Self::Pipeline(memory) => *memory,
            Self::PerStepper(old) => old.into_memory(stepper),
        }
    }
}

impl Serialize for SavedMemory {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Pipeline(memory) => memory.serialize(serializer),
            Self::PerStepper(old) => old.serialize(serializer),
        }
    }
}

/// The fields of either form, for error messages.
const FIELDS: &[&str] = &[
    "scheme",
    "active",
    "solver",
    "stewart_trinkle",
    "moreau_jean",
    "anitescu_potra",
    "euler_lcp",
];

impl<'de> Deserialize<'de> for SavedMemory {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // The struct's name tells the forms apart, and a named deserialize
        // would insist on one of them: read the fields, and choose by them.
        deserializer.deserialize_any(MemoryVisitor)
    }
}

struct MemoryVisitor;

impl<'de> Visitor<'de> for MemoryVisitor {
    type Value = SavedMemory;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a StepperMemory (or an older Steppers) struct")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<SavedMemory, A::Error> {
        let mut memory = StepperMemory::default();
        let mut current = false;
        let mut old = Steppers::default();
        let mut legacy = false;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "scheme" => memory.scheme = map.next_value()?,
                "active" => memory.active = map.next_value()?,
                "solver" => memory.solver = map.next_value()?,
                "stewart_trinkle" => old.stewart_trinkle = map.next_value()?,
                "moreau_jean" => old.moreau_jean = map.next_value()?,
                "anitescu_potra" => old.anitescu_potra = map.next_value()?,
                "euler_lcp" => old.euler_lcp = map.next_value()?,
                other => return Err(de::Error::unknown_field(other, FIELDS)),
            }
            match key.as_str() {
                "scheme" | "active" | "solver" => current = true,
                _ => legacy = true,
            }
        }
        match (current, legacy) {
            (true, true) => Err(de::Error::custom(
                "mixes the fields of StepperMemory (scheme, active, solver) with those of the older Steppers",
            )),
            (false, true) => Ok(SavedMemory::PerStepper(Box::new(old))),
            _ => Ok(SavedMemory::Pipeline(Box::new(memory))),
        }
    }
}

/// Every stepper's memory, as snapshots kept it before the one step
/// pipeline.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename = "Steppers", default)]
pub struct Steppers {
    stewart_trinkle: OldStewartTrinkle,
    moreau_jean: OldMoreauJean,
    anitescu_potra: OldAnitescuPotra,
    euler_lcp: OldAnitescuPotra,
}

impl Steppers {
    fn into_memory(self, stepper: StepperKind) -> StepperMemory {
        let (active, solver) = match stepper {
            StepperKind::StewartTrinkle => {
                let st = self.stewart_trinkle;
                (st.active, st.solver.into_solver(Form::Position))
            }
            // The old whole-list basis of (33) does not say which contacts had
            // friction rows: (33) starts cold once.
            StepperKind::MoreauJean => (
                ActiveSet::new(),
                self.moreau_jean.solver.into_solver(Form::Impact),
            ),
            StepperKind::AnitescuPotra => (self.anitescu_potra.active, ContactSolver::default()),
            StepperKind::EulerLcp => (self.euler_lcp.active, ContactSolver::default()),
        };
        StepperMemory {
            scheme: stepper,
            active,
            solver,
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename = "StewartTrinkle", default)]
struct OldStewartTrinkle {
    active: ActiveSet,
    solver: OldSolver,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename = "MoreauJean", default)]
struct OldMoreauJean {
    /// The warm start of the planar LCP (33), which loading drops.
    warm: OldWarmStart,
    solver: OldSolver,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename = "AnitescuPotra", default)]
struct OldAnitescuPotra {
    active: ActiveSet,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename = "ContactSolver", default)]
struct OldSolver {
    warm: OldWarmStart,
    impulses: HashMap<ContactId, Vec<f64>>,
    levels: HashMap<usize, usize>,
    dense_level: usize,
}

impl OldSolver {
    /// The solver memory, its (29) bases tagged `form` (the one form the old
    /// stepper solved them in, tagged 29 then), each contact's flags in the
    /// order β₁ … β_k, c_n, λ.
    fn into_solver(self, form: Form) -> ContactSolver {
        let warm = self.warm;
        let contacts = warm
            .contacts
            .into_iter()
            .map(|(id, mut b)| {
                b.friction.extend([b.normal, b.lambda]);
                (id, b.friction)
            })
            .collect();
        let warm = WarmStart::restored((warm.form != 0).then_some(form), contacts);
        let impulses = LastImpulses::restored(self.impulses);
        ContactSolver::restored(warm, impulses, self.levels, self.dense_level)
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename = "WarmStart", default)]
struct OldWarmStart {
    /// 29 for (29) and 0 before any, 33 for (33).
    form: u32,
    contacts: HashMap<ContactId, OldBasis>,
    exact: Option<(u32, Vec<ContactId>, Vec<usize>)>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename = "ContactBasis", default)]
struct OldBasis {
    friction: Vec<bool>,
    normal: bool,
    lambda: bool,
}
