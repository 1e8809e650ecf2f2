//! contactlab: rigid-body dynamics with contact, impacts and Coulomb friction,
//! stepped by complementarity time-stepping.
//!
//! Data flows one way: a scene file is loaded into a model; the model and the
//! state are assembled into step data; a stepper turns that into an LCP solved by
//! [`lcp::lemke`]; the impulses give the new state. The physics core never imports
//! Bevy; the viewer (feature `viewer`) is a thin shell over it.

#[macro_use]
mod simd;

pub mod atomic_file;
pub mod cli;
pub mod collision;
pub mod geometry;
pub mod interrupt;
pub mod lcp;
pub mod magnitude;
pub(crate) mod mix;
pub mod model;
pub(crate) mod pair_thread;
pub mod params;
pub mod scene;
pub mod sim;
pub mod solver;

#[cfg(feature = "video")]
pub mod record;
pub mod stepper;

#[cfg(feature = "viewer")]
pub mod viewer;
