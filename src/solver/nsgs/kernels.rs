//! The kernels of NSGS's sweeps on the circular cone: each contact's rows
//! copied into one arena ([`Span`]), and the velocity read and written in
//! padded blocks ([`Velocity`]) through raw pointers, so that the two
//! threads of [`super::halves`] can update disjoint bodies of one vector.
//! The `unsafe` functions here state their contract; the invariants that
//! make the callers' uses sound are stated where the spans and the halves
//! are built.

use super::coulomb_cone;
use crate::model::jacobian::rows_dot;
use crate::model::{Block, ContactJacobian};
use nalgebra::{DVector, Matrix3, Vector3};

with_avx2! {
/// One sweep's visits to `cones`, in their order: each contact's local
/// problem solved exactly with the others held, its impulse and the
/// velocity updated. Returns Σ‖Δr‖² and Σ‖r‖² over them.
///
/// # Safety
/// No other thread touches these cones' bodies' velocities during the call.
pub(super) unsafe fn sweep(
    cones: &mut [Cone],
    before: &mut [f64],
    after: &mut [f64],
    arena: &[f64],
    w: &[f64],
    velocity: Velocity,
) -> (f64, f64) {
    let (mut change, mut size) = (0.0, 0.0);
    for ((cone, before), after) in cones
        .iter_mut()
        .zip(before.chunks_exact_mut(3))
        .zip(after.chunks_exact_mut(3))
    {
        before.copy_from_slice(cone.r.as_slice());
        // q: the local velocity without this contact's own impulse,
        // and the proximal term −σ r_old (see [`PROXIMAL`]): both at
        // once as (W_jj + σI) r_old.
        // SAFETY: the caller's.
        let q = unsafe { cone.span.dots_at(arena, velocity) } + cone.terms - cone.w_local * cone.r;
        let r = coulomb_cone::solve(
            &cone.w_local,
            &cone.w_inverse,
            &q,
            cone.mu,
            &cone.r,
            cone.isotropic,
        );
        // A non-finite local solution (only from non-finite data) keeps
        // the last impulse; the residual reports it.
        let kept = if r.iter().all(|x| x.is_finite()) {
            let delta = r - cone.r;
            // SAFETY: the caller's.
            unsafe { cone.span.add_at(arena, w, &delta, velocity) };
            change += delta.norm_squared();
            r
        } else {
            cone.r
        };
        // From the value in hand, not read back from the cone just
        // written (a load across two stores stalls the store buffer).
        size += kept.norm_squared();
        after.copy_from_slice(kept.as_slice());
        cone.r = kept;
    }
    (change, size)
}
}

with_avx2! {
/// Moves `cones` to the impulses `next` (three per cone, in their order)
/// and the velocity with them.
///
/// # Safety
/// As [`sweep`]'s.
pub(super) unsafe fn move_to(cones: &mut [Cone], next: &[f64], arena: &[f64], w: &[f64], velocity: Velocity) {
    for (cone, next) in cones.iter_mut().zip(next.chunks_exact(3)) {
        let next = Vector3::new(next[0], next[1], next[2]);
        // SAFETY: the caller's.
        unsafe { cone.span.add_at(arena, w, &(next - cone.r), velocity) };
        cone.r = next;
    }
}
}

with_avx2! {
/// The residual's sums Σ‖rⱼ − Π_K(rⱼ − ρⱼûⱼ)‖² and Σ‖rⱼ‖² over `cones`
/// ([`cone_residual`]).
///
/// # Safety
/// Nothing writes these cones' bodies' velocities during the call.
pub(super) unsafe fn residual_sums(cones: &[Cone], arena: &[f64], velocity: Velocity) -> (f64, f64) {
    let (mut error, mut size) = (0.0, 0.0);
    for cone in cones {
        // SAFETY: the caller's.
        let u = unsafe { cone.span.dots_at(arena, velocity) } + cone.terms;
        let rho = 1.0 / cone.w_nn.max(f64::MIN_POSITIVE);
        error += coulomb_cone::natural_map(&cone.r, &u, cone.mu, rho).norm_squared();
        size += cone.r.norm_squared();
    }
    (error, size)
}
}

/// Entries per body in a large problem's velocity ([`pad`]): a cache line
/// of f64, so that the two threads never write one line.
pub(super) const PAD: usize = 8;

/// The padded copy of `v`: body k's `block` velocities at k·[`PAD`].
pub(super) fn pad(v: &DVector<f64>, block: usize, out: &mut Vec<f64>) {
    out.clear();
    out.resize(v.len() / block * PAD + PAD, 0.0);
    for (k, body) in v.as_slice().chunks_exact(block).enumerate() {
        out[k * PAD..k * PAD + block].copy_from_slice(body);
    }
}

/// Writes the padded `u` back into `v`.
pub(super) fn unpad(u: &[f64], block: usize, v: &mut DVector<f64>) {
    for (k, body) in v.as_mut_slice().chunks_exact_mut(block).enumerate() {
        body.copy_from_slice(&u[k * PAD..k * PAD + block]);
    }
}

/// Where one contact's rows live in [`Workspace::arena`]: its rows n, t₁,
/// t₂ (n, t in the plane) on its blocks, one after the other (W, M⁻¹'s
/// diagonal, is read from its own velocity-sized vector when an impulse is
/// applied; a weighted copy of the rows doubled what a visit reads and
/// measured no faster). The sweeps read each contact from
/// one place, in the order they visit them, instead of from its Jacobian's
/// own allocation among all the candidates' (the 5,000-grain silo's sweeps,
/// whose candidates outnumber the contacts taking part ten to one, cost a
/// third as much).
#[derive(Debug, Clone, Copy)]
pub(super) struct Span {
    pub(super) offset: usize,
    pub(super) blocks: [Block; 2],
    pub(super) count: usize,
    pub(super) width: usize,
    pub(super) rows: usize,
    /// Which of the fixed-size kernels reads it (every block 6 long and three
    /// rows: a rigid body in space; 3 long and two rows: in the plane).
    pub(super) shape: Shape,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Shape {
    Space,
    Plane,
    /// One row (a waiting contact's normal, [`Participation`]) on blocks
    /// of 6 and of 3.
    SpaceRow,
    PlaneRow,
    General,
}

impl Span {
    /// Copies rows 0..`rows` of `jac` to the end of `arena`.
    pub(super) fn copy(jac: &ContactJacobian, rows: usize, arena: &mut Vec<f64>) -> Self {
        let offset = arena.len();
        let width = jac.width();
        for r in 0..rows {
            arena.extend_from_slice(jac.row(r));
        }
        let mut blocks = [jac.blocks()[0]; 2];
        blocks[..jac.blocks().len()].copy_from_slice(jac.blocks());
        let uniform = |len: usize| jac.blocks().iter().all(|b| b.len == len);
        let shape = match rows {
            3 if uniform(6) => Shape::Space,
            2 if uniform(3) => Shape::Plane,
            1 if uniform(6) => Shape::SpaceRow,
            1 if uniform(3) => Shape::PlaneRow,
            _ => Shape::General,
        };
        Self {
            offset,
            blocks,
            count: jac.blocks().len(),
            width,
            rows,
            shape,
        }
    }

    /// (J v) on its rows (0 for an absent second tangent), through a
    /// shared [`Velocity`].
    ///
    /// # Safety
    /// No other thread writes this contact's blocks during the call (for a
    /// [`Shape::General`] span: any part of the velocity).
    #[inline(always)]
    pub(super) unsafe fn dots_at(&self, arena: &[f64], v: Velocity) -> Vector3<f64> {
        match self.shape {
            // SAFETY: the caller's.
            Shape::Space => unsafe { self.dots_fixed::<3, 6>(arena, v) },
            Shape::Plane => unsafe { self.dots_fixed::<2, 3>(arena, v) },
            Shape::SpaceRow => unsafe { self.dots_fixed::<1, 6>(arena, v) },
            Shape::PlaneRow => unsafe { self.dots_fixed::<1, 3>(arena, v) },
            Shape::General => {
                let mut out = Vector3::zeros();
                rows_dot(
                    &arena[self.offset..],
                    self.width,
                    &self.blocks[..self.count],
                    // SAFETY: the caller's.
                    unsafe { v.whole_ref() },
                    &mut out.as_mut_slice()[..self.rows],
                );
                out
            }
        }
    }

    /// [`Span::dots_at`] for R rows on blocks of N velocities: fixed-size
    /// slices the compiler unrolls (the silo's sweeps spent a third of their
    /// time in the general loops over blocks and rows).
    ///
    /// # Safety
    /// As [`Span::dots_at`].
    #[inline(always)]
    pub(super) unsafe fn dots_fixed<const R: usize, const N: usize>(
        &self,
        arena: &[f64],
        v: Velocity,
    ) -> Vector3<f64> {
        let width = self.width;
        let rows = &arena[self.offset..self.offset + R * width];
        let mut out = Vector3::zeros();
        for (i, b) in self.blocks[..self.count].iter().enumerate() {
            // SAFETY: the caller's.
            let Some(part) = (unsafe { v.block_ref::<N>(b.start) }) else {
                continue;
            };
            for r in 0..R {
                let start = r * width + i * N;
                if let Ok(row) = <&[f64; N]>::try_from(&rows[start..start + N]) {
                    out[r] += row.iter().zip(part).map(|(a, x)| a * x).sum::<f64>();
                }
            }
        }
        out
    }

    /// v += W Jᵀ Δr, with `w` the diagonal of W, through a shared
    /// [`Velocity`].
    ///
    /// # Safety
    /// No other thread reads or writes this contact's blocks during the
    /// call (for a [`Shape::General`] span: any part of the velocity).
    #[inline(always)]
    pub(super) unsafe fn add_at(
        &self,
        arena: &[f64],
        w: &[f64],
        delta: &Vector3<f64>,
        v: Velocity,
    ) {
        match self.shape {
            // SAFETY: the caller's.
            Shape::Space => unsafe { self.add_fixed::<3, 6>(arena, w, delta, v) },
            Shape::Plane => unsafe { self.add_fixed::<2, 3>(arena, w, delta, v) },
            Shape::SpaceRow => unsafe { self.add_fixed::<1, 6>(arena, w, delta, v) },
            Shape::PlaneRow => unsafe { self.add_fixed::<1, 3>(arena, w, delta, v) },
            Shape::General => {
                // SAFETY: the caller's.
                let v = unsafe { v.whole() };
                let mut at = 0;
                for b in &self.blocks[..self.count] {
                    let part = &mut v[b.range()];
                    let weights = &w[b.range()];
                    for r in 0..self.rows {
                        if delta[r] == 0.0 {
                            continue;
                        }
                        let start = self.offset + r * self.width + at;
                        let row = &arena[start..start + b.len];
                        for ((x, a), d) in part.iter_mut().zip(row).zip(weights) {
                            *x += delta[r] * (a * d);
                        }
                    }
                    at += b.len;
                }
            }
        }
    }

    /// [`Span::add_at`] for R rows on blocks of N velocities.
    ///
    /// # Safety
    /// As [`Span::add_at`].
    #[inline(always)]
    pub(super) unsafe fn add_fixed<const R: usize, const N: usize>(
        &self,
        arena: &[f64],
        w: &[f64],
        delta: &Vector3<f64>,
        v: Velocity,
    ) {
        let width = self.width;
        let rows = &arena[self.offset..self.offset + R * width];
        for (i, b) in self.blocks[..self.count].iter().enumerate() {
            let Ok(weights) = <&[f64; N]>::try_from(&w[b.start..b.start + N]) else {
                continue;
            };
            let mut sum = [0.0; N];
            for r in 0..R {
                let start = r * width + i * N;
                if let Ok(row) = <&[f64; N]>::try_from(&rows[start..start + N]) {
                    for (s, a) in sum.iter_mut().zip(row) {
                        *s += delta[r] * a;
                    }
                }
            }
            // SAFETY: the caller's.
            let Some(part) = (unsafe { v.block::<N>(b.start) }) else {
                continue;
            };
            for ((x, s), d) in part.iter_mut().zip(sum).zip(weights) {
                *x += s * d;
            }
        }
    }
}

/// The velocity as the two halves of a sweep share it ([`Halves`]): each
/// visit borrows only its own contact's blocks, for the length of one
/// kernel, and the halves' contacts touch disjoint bodies.
#[derive(Debug, Clone, Copy)]
pub(super) struct Velocity {
    pub(super) ptr: *mut f64,
    pub(super) len: usize,
    /// Laid out by [`pad`]: the body at velocity index s (a
    /// multiple of its N velocities) at s / N · [`PAD`].
    pub(super) padded: bool,
}

// SAFETY: a `Velocity` is handed to the second thread only for the length
// of one join, while the vector it points to is borrowed mutably by the
// solve, and each side touches only the blocks of its own bodies.
unsafe impl Send for Velocity {}

unsafe impl Sync for Velocity {}

impl Velocity {
    pub(super) fn of(v: &mut DVector<f64>) -> Self {
        let v = v.as_mut_slice();
        Self {
            ptr: v.as_mut_ptr(),
            len: v.len(),
            padded: false,
        }
    }

    /// The padded copy of [`pad`].
    pub(super) fn padded(v: &mut [f64]) -> Self {
        Self {
            ptr: v.as_mut_ptr(),
            len: v.len(),
            padded: true,
        }
    }

    /// Where the block of N velocities at `start` lives.
    #[inline(always)]
    pub(super) fn at<const N: usize>(self, start: usize) -> usize {
        if self.padded { start / N * PAD } else { start }
    }

    /// For reads only.
    pub(super) fn reading(v: &DVector<f64>) -> Self {
        let v = v.as_slice();
        Self {
            ptr: v.as_ptr().cast_mut(),
            len: v.len(),
            padded: false,
        }
    }

    /// The N velocities from `start`, if they are in range.
    ///
    /// # Safety
    /// The vector is alive, and no other reference to these entries is in
    /// use while the result is.
    #[inline(always)]
    #[allow(clippy::mut_from_ref)]
    pub(super) unsafe fn block<'a, const N: usize>(self, start: usize) -> Option<&'a mut [f64; N]> {
        let start = self.at::<N>(start);
        if start.checked_add(N)? > self.len {
            return None;
        }
        // SAFETY: in range (above); exclusive by the caller's promise.
        Some(unsafe { &mut *self.ptr.add(start).cast::<[f64; N]>() })
    }

    /// [`Velocity::block`] for reading.
    ///
    /// # Safety
    /// The vector is alive, and nothing writes these entries while the
    /// result is in use.
    #[inline(always)]
    pub(super) unsafe fn block_ref<'a, const N: usize>(self, start: usize) -> Option<&'a [f64; N]> {
        let start = self.at::<N>(start);
        if start.checked_add(N)? > self.len {
            return None;
        }
        // SAFETY: in range (above); unwritten by the caller's promise.
        Some(unsafe { &*self.ptr.add(start).cast::<[f64; N]>() })
    }

    /// Every velocity, for reading.
    ///
    /// # Safety
    /// As [`Velocity::block_ref`], for the whole vector.
    pub(super) unsafe fn whole_ref<'a>(self) -> &'a [f64] {
        debug_assert!(!self.padded, "a general span on the padded velocity");
        // SAFETY: the caller's.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// Every velocity.
    ///
    /// # Safety
    /// As [`Velocity::block`], for the whole vector.
    #[allow(clippy::mut_from_ref)]
    pub(super) unsafe fn whole<'a>(self) -> &'a mut [f64] {
        debug_assert!(!self.padded, "a general span on the padded velocity");
        // SAFETY: the caller's.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }

    /// The storage in its own layout, padded or not: for a copy of the whole
    /// velocity and its return.
    ///
    /// # Safety
    /// As [`Velocity::block`], for the whole storage.
    #[allow(clippy::mut_from_ref)]
    pub(super) unsafe fn storage<'a>(self) -> &'a mut [f64] {
        // SAFETY: the caller's.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

/// One contact's data for the sweeps on the circular cone.
#[derive(Debug, Clone, Copy)]
pub(super) struct Cone {
    /// The contact's index in the problem: the sweeps' order.
    pub(super) contact: usize,
    /// Its rows in the arena.
    pub(super) span: Span,
    /// (W_jj)_NN of the Delassus block W_jj in (n, t₁, t₂): the residual's
    /// scale.
    pub(super) w_nn: f64,
    /// The local problem's block W_jj + σI, with σ = [`PROXIMAL`] ·
    /// (W_jj)_NN the proximal shift, and its inverse (the sticking impulse).
    pub(super) w_local: Matrix3<f64>,
    pub(super) w_inverse: Matrix3<f64>,
    /// Whether `w_local` is diag(a, b, b) (a sphere's contact: sliding in
    /// closed form, [`coulomb_cone::decoupled_and_isotropic`]), decided once
    /// rather than at every visit.
    pub(super) isotropic: bool,
    /// The scheme's terms on the n, t₁, t₂ rows.
    pub(super) terms: Vector3<f64>,
    /// The impulse (r_N, r_T₁, r_T₂).
    pub(super) r: Vector3<f64>,
    pub(super) mu: f64,
}
