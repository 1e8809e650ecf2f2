//! The contact-solver layer: the contact problem every scheme poses
//! ([`ContactProblem`], the LCP (29) of Stewart & Trinkle 1996 or the planar
//! impact LCP (33) of Glocker & Studer 2005) and the one solver of it
//! ([`ContactSolver`]), with its options ([`SolverOptions`]: Lemke or NSGS)
//! travelling with each solve.
//!
//! Two contacts are coupled in (29) only through a body they share (the
//! entries of JᵀWJ are sums over shared body blocks, and Ẽ and μ̃ stay within
//! a contact). With a block-diagonal W the LCP is therefore block-diagonal
//! over the connected components of the graph of bodies joined by contacts —
//! a pile's separate heaps, or balls that do not touch — and each component
//! is solved on its own: exactly the same solution set, in time that grows
//! with the size of each island instead of the whole scene. Each island is
//! solved by Lemke on the operator [`lemke::operator::ContactLcp`] (Lloyd's
//! method, [`crate::lcp::solve_structured`]), never forming M. A dense W (a
//! generalized linear system, or Anitescu–Potra's joints' Schur complement)
//! couples everything and keeps the dense tableau ([`lemke::dense`]);
//! Moreau–Jean's planar LCP (33) is solved there too. NSGS ([`nsgs`]) solves
//! the same problems on block-diagonal W by sweeps over the contacts.
//!
//! - [`problem`]: the problem, its layout and activation;
//! - [`options`]: how a problem is solved;
//! - [`contact_solver`]: the solver and its memory;
//! - [`lemke`] and [`nsgs`]: the two methods;
//! - [`warm`]: warm starts by contact identity;
//! - [`planar_impact`]: the LCP (33);
//! - [`solution`]: what a solve gave, whatever the method;
//! - [`linalg`]: the dense linear algebra they share.

pub mod contact_solver;
pub mod lemke;
pub mod linalg;
pub mod nsgs;
pub mod options;
pub mod planar_impact;
pub mod problem;
pub mod solution;
pub mod warm;

pub use contact_solver::{ContactSolver, SolveBuffers};
pub use lemke::dense::PlanarSolve;
pub use options::{LemkeSettings, NsgsOptions, SolverOptions};
pub use problem::{Activation, ContactProblem, Layout};
pub use solution::{ContactSolution, Failed, Unknowns};
pub use warm::{Form, LastImpulses, WarmStart};
