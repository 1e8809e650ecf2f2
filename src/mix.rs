//! splitmix64 (Steele, Lea & Flood 2014, "Fast splittable pseudorandom
//! number generators"): a fixed, well-mixed 64-bit function, for keys and
//! sequences that must be the same on every machine.

/// splitmix64's increment, the golden ratio's fractional part in 64 bits.
pub(crate) const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// splitmix64's output from the state `x`: its finalizer applied to
/// x + [`GAMMA`].
pub(crate) fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(GAMMA);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference generator's first outputs from the seed 0 (its states
    /// γ, 2γ, 3γ).
    #[test]
    fn the_outputs_are_splitmix64s() {
        let outputs = [0, GAMMA, GAMMA.wrapping_mul(2)].map(splitmix64);
        assert_eq!(
            outputs,
            [
                0xE220_A839_7B1D_CDAF,
                0x6E78_9E6A_A1B9_65F4,
                0x06C4_5D18_8009_454F
            ]
        );
    }
}
