//! Fork–join for two: a second thread that runs one closure while the
//! caller runs another, for the NSGS sweeps' two halves of space
//! ([`crate::stepper::nsgs`]), the narrow phase's two halves of the
//! candidate pairs and the broad phase's two halves of its rows
//! ([`crate::model::rigid`]). One helper serves the
//! process ([`shared`]).
//!
//! A sweep of the 1,000-grain silo takes about 40 µs, so the handshake must
//! cost a few hundred nanoseconds, not the 20–40 µs of waking a sleeping
//! thread (`rayon::join` of two empty closures measured 19–24 µs on this
//! 2-core machine, a scoped thread 38 µs). The helper therefore spins while
//! work keeps coming (up to [`SPIN`] after its last job) and only then
//! parks; the caller spins while the helper finishes its half. A join that
//! finds the helper busy (another solve holds it) runs both closures on the
//! caller's thread: what a solve computes never depends on which thread ran
//! which half.

use std::cell::UnsafeCell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// How long the helper keeps spinning after its last job before it parks.
/// A step's contact search between two solves (about 2 ms on the silo) is
/// longer, so the helper parks there and is woken once per solve.
pub const SPIN: Duration = Duration::from_micros(200);

const IDLE: u8 = 0;
const POSTED: u8 = 1;
const DONE: u8 = 2;
const EXIT: u8 = 3;

/// A job: the closure the caller posted, its lifetime erased. The caller
/// waits in [`PairThread::join`] until the helper has run it, so the
/// pointer never outlives what it points to.
type Job = *mut (dyn FnMut() + Send);

struct Shared {
    state: AtomicU8,
    job: UnsafeCell<Option<Job>>,
    panicked: AtomicBool,
}

// SAFETY: `job` is written only by the caller while the state is IDLE (the
// helper does not read it then) and read only by the helper while the state
// is POSTED (the caller does not touch it then); the state's
// release/acquire orders the two.
unsafe impl Sync for Shared {}
unsafe impl Send for Shared {}

/// The second thread ([module documentation](self)).
pub struct PairThread {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    /// Held for the duration of a join.
    busy: Mutex<()>,
}

impl std::fmt::Debug for PairThread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PairThread").finish_non_exhaustive()
    }
}

impl PairThread {
    /// Starts the helper, or `None` when the machine has one core or the
    /// thread cannot be spawned (the joins then run on the caller's thread).
    pub fn start() -> Option<Self> {
        if thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
            return None;
        }
        let shared = Arc::new(Shared {
            state: AtomicU8::new(IDLE),
            job: UnsafeCell::new(None),
            panicked: AtomicBool::new(false),
        });
        let theirs = Arc::clone(&shared);
        let thread = thread::Builder::new()
            .name("contactlab-helper".into())
            .spawn(move || helper(&theirs))
            .ok()?;
        Some(Self {
            shared,
            thread: Some(thread),
            busy: Mutex::new(()),
        })
    }

    /// Runs `mine` on this thread and `theirs` on the helper, and returns
    /// when both have finished. A panic in either is resumed here.
    pub fn join<A, B>(&self, mine: A, theirs: B)
    where
        A: FnOnce(),
        B: FnOnce() + Send,
    {
        let Ok(guard) = self.busy.try_lock() else {
            mine();
            theirs();
            return;
        };
        let mut theirs = Some(theirs);
        let mut call = move || {
            if let Some(f) = theirs.take() {
                f();
            }
        };
        let job: *mut (dyn FnMut() + Send + '_) = &mut call;
        // SAFETY: only the lifetime is erased; the helper has finished with
        // the job before this function returns (the wait below runs even
        // when `mine` panics).
        let job: Job = unsafe { std::mem::transmute(job) };
        // SAFETY: the state is IDLE, so the helper does not read `job`.
        unsafe { *self.shared.job.get() = Some(job) };
        self.shared.state.store(POSTED, Ordering::Release);
        if let Some(t) = &self.thread {
            t.thread().unpark();
        }
        let mine = panic::catch_unwind(AssertUnwindSafe(mine));
        while self.shared.state.load(Ordering::Acquire) != DONE {
            std::hint::spin_loop();
        }
        self.shared.state.store(IDLE, Ordering::Relaxed);
        // Released before a panic resumes, so that it does not poison.
        drop(guard);
        if let Err(payload) = mine {
            panic::resume_unwind(payload);
        }
        if self.shared.panicked.swap(false, Ordering::Relaxed) {
            panic!("the helper thread panicked");
        }
    }
}

impl Drop for PairThread {
    fn drop(&mut self) {
        self.shared.state.store(EXIT, Ordering::Release);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

/// Whether the last measurement found two threads faster than one
/// ([`set_pays`]; NSGS measures it on its first sweeps).
static PAYS: AtomicBool = AtomicBool::new(true);

/// Whether two threads were faster than one when last measured.
pub fn pays() -> bool {
    PAYS.load(Ordering::Relaxed)
}

/// Records whether two threads were faster than one.
pub fn set_pays(pays: bool) {
    PAYS.store(pays, Ordering::Relaxed);
}

/// The process's helper, started at its first use; `None` on a one-core
/// machine.
pub fn shared() -> Option<&'static PairThread> {
    static SHARED: OnceLock<Option<PairThread>> = OnceLock::new();
    SHARED.get_or_init(PairThread::start).as_ref()
}

/// Runs `mine` and `theirs`, on two threads when there is a `pair` and
/// `work` says the halves are worth it, and returns both results.
pub fn both<A, B, RA, RB>(pair: Option<&PairThread>, work: bool, mine: A, theirs: B) -> (RA, RB)
where
    A: FnOnce() -> RA,
    B: FnOnce() -> RB + Send,
    RB: Send,
{
    match pair {
        Some(pair) if work => {
            let (mut a, mut b) = (None, None);
            pair.join(|| a = Some(mine()), || b = Some(theirs()));
            match (a, b) {
                (Some(a), Some(b)) => (a, b),
                // `join` returns only after both ran (or resumes a panic).
                _ => unreachable!("both halves ran"),
            }
        }
        _ => (mine(), theirs()),
    }
}

fn helper(shared: &Shared) {
    let mut last = Instant::now();
    let mut spins = 0u32;
    loop {
        match shared.state.load(Ordering::Acquire) {
            POSTED => {
                // SAFETY: POSTED: the caller wrote the job and waits.
                let job = unsafe { (*shared.job.get()).take() };
                if let Some(job) = job {
                    // SAFETY: the caller keeps the closure alive until DONE.
                    let run = panic::catch_unwind(AssertUnwindSafe(|| unsafe { (*job)() }));
                    if run.is_err() {
                        shared.panicked.store(true, Ordering::Relaxed);
                    }
                }
                shared.state.store(DONE, Ordering::Release);
                last = Instant::now();
                spins = 0;
            }
            EXIT => return,
            _ => {
                spins = spins.wrapping_add(1);
                // Reading the clock costs more than a spin: every 64th.
                if spins.is_multiple_of(64) && last.elapsed() > SPIN {
                    thread::park();
                    last = Instant::now();
                } else {
                    std::hint::spin_loop();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_halves_run_and_write_their_own_parts() {
        let Some(pair) = PairThread::start() else {
            return;
        };
        let mut data = vec![0u64; 1000];
        for round in 1..=200u64 {
            let (left, right) = data.split_at_mut(500);
            pair.join(
                || left.iter_mut().for_each(|x| *x += round),
                || right.iter_mut().for_each(|x| *x += 2 * round),
            );
            // Parked between some rounds.
            if round % 50 == 0 {
                thread::sleep(Duration::from_millis(1));
            }
        }
        let total: u64 = (1..=200).sum();
        assert!(data[..500].iter().all(|&x| x == total));
        assert!(data[500..].iter().all(|&x| x == 2 * total));
    }

    #[test]
    fn a_panic_on_the_helper_reaches_the_caller() {
        let Some(pair) = PairThread::start() else {
            return;
        };
        let caught = panic::catch_unwind(AssertUnwindSafe(|| pair.join(|| {}, || panic!("half"))));
        assert!(caught.is_err());
        // The pair still works afterwards, on both threads.
        let caller = thread::current().id();
        let mut ran_on = None;
        pair.join(|| {}, || ran_on = Some(thread::current().id()));
        assert!(ran_on.is_some_and(|id| id != caller));
    }
}
