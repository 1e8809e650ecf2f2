//! The magnitude rule for every real of a scene: finite and at most
//! [`MAX_MAGNITUDE`] in SI units.
//!
//! The dynamics multiply inputs together: energies ½mv² and ½k d², spring
//! forces k·d, the Delassus blocks h·JM⁻¹Jᵀ with lever arms squared, and
//! Lemke's pivots multiply those again. Past ~1e20 nothing of the smaller
//! terms survives rounding, and near f64's limit the first step overflows;
//! 1e12 keeps a product of a dozen inputs finite.

/// The largest magnitude a number in a scene may have, SI units.
pub const MAX_MAGNITUDE: f64 = 1e12;

/// The smallest a mass (kg) or a body's size (m) may be: the dynamics divide
/// by them (M⁻¹, lever arms in the inertia), and below 1/[`MAX_MAGNITUDE`]
/// their reciprocals break the rule above (a mass of 5e-324 kg made M⁻¹
/// infinite and the step's LCP unsolvable).
pub const MIN_MASS_OR_SIZE: f64 = 1.0 / MAX_MAGNITUDE;

/// The smallest principal inertia a scene may give, kg·m²: that of
/// [`MIN_MASS_OR_SIZE`] kg at [`MIN_MASS_OR_SIZE`] m.
pub const MIN_INERTIA: f64 = MIN_MASS_OR_SIZE * MIN_MASS_OR_SIZE * MIN_MASS_OR_SIZE;

/// Whether `x` is allowed.
pub fn allowed(x: f64) -> bool {
    x.is_finite() && x.abs() <= MAX_MAGNITUDE
}
