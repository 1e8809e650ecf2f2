//! Kernels compiled twice, for the baseline and for AVX2, chosen at run time.

/// Defines a function (safe or `unsafe`) whose body runs compiled for AVX2
/// when the processor has it (checked once per call, cached by the
/// standard library), and as compiled for the baseline otherwise. NSGS's
/// kernels (a contact's three rows on one or two blocks of six velocities,
/// the acceleration's passes) then run on 256-bit registers: the
/// 1,000-grain silo's step took 10 % less CPU time. Lemke's product form
/// applies its eta columns with it. Rust never fuses a multiplication
/// and an addition into one rounding on its own, and the compiler may not
/// reorder floating-point sums, so both versions give the same bits (a
/// hash of q and v after 0.3 s of the silos of 1,000 and 5,000 grains, the
/// hourglass and the avalanche, with the dispatch on and off).
macro_rules! with_avx2 {
    (
        $(#[$meta:meta])*
        $vis:vis unsafe fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)? $body:block
    ) => {
        $(#[$meta])*
        $vis unsafe fn $name($($arg: $ty),*) $(-> $ret)? {
            #[inline(always)]
            unsafe fn baseline($($arg: $ty),*) $(-> $ret)? $body
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2")]
            unsafe fn avx2($($arg: $ty),*) $(-> $ret)? {
                // SAFETY: the outer function's contract.
                unsafe { baseline($($arg),*) }
            }
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the outer function's contract, on a processor
                // with AVX2 (checked).
                return unsafe { avx2($($arg),*) };
            }
            // SAFETY: the outer function's contract.
            unsafe { baseline($($arg),*) }
        }
    };
    (
        $(#[$meta:meta])*
        $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)? $body:block
    ) => {
        $(#[$meta])*
        $vis fn $name($($arg: $ty),*) $(-> $ret)? {
            #[inline(always)]
            fn baseline($($arg: $ty),*) $(-> $ret)? $body
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2")]
            fn avx2($($arg: $ty),*) $(-> $ret)? {
                baseline($($arg),*)
            }
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the processor has AVX2 (checked).
                return unsafe { avx2($($arg),*) };
            }
            baseline($($arg),*)
        }
    };
}
