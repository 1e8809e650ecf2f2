//! A time step's budget of Lemke pivots and seconds.
//!
//! A step's LCPs are solved by Lemke's method inside the contact solver's
//! fallbacks (warm starts, perturbed retries, the regularization ladder,
//! Stewart–Trinkle's fixed-point iterations), each of which may pivot. The
//! step's [`Budget`] counts every pivot of all of them, on both threads, and
//! once the step has spent more pivots or seconds than it allows, every
//! pivot loop ends at its next pivot with [`super::LcpStatus::OverBudget`]:
//! the step fails, its state is kept, and the caller reports the budget
//! that was exceeded.
//!
//! The budget travels with the thread that runs the step ([`within`]), so
//! the solvers need no parameter for it; the Lemke islands solved on the
//! second thread take it along. Outside [`within`] nothing is counted, and
//! NSGS's local solves run outside it: they are its kernels, not the step's
//! LCP.

use std::cell::{Cell, RefCell};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How much one step may spend before it stops: Lemke pivots (over every
/// solve of the step) and wall-clock seconds. `None`: no limit of that kind.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// Lemke pivots a step may take, over all its solves.
    pub max_pivots: Option<u64>,
    /// Seconds a step may take.
    pub max_seconds: Option<f64>,
}

impl Limits {
    /// The default pivot budget of a step. The shipped scenes' costliest
    /// step (a solve at the wall's impact, 1,620 unknowns) takes about
    /// 5·10⁵; a step past 2·10⁶ pivots is minutes of a standstill.
    pub const DEFAULT_MAX_PIVOTS: u64 = 2_000_000;

    /// No limit at all.
    pub const NONE: Self = Self {
        max_pivots: None,
        max_seconds: None,
    };
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_pivots: Some(Self::DEFAULT_MAX_PIVOTS),
            max_seconds: None,
        }
    }
}

/// What ended a step that went over its budget.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Overrun {
    /// More pivots than [`Limits::max_pivots`].
    Pivots(u64),
    /// Longer than [`Limits::max_seconds`].
    Seconds(f64),
}

const WITHIN: u8 = 0;
const PIVOTS: u8 = 1;
const SECONDS: u8 = 2;
const CANCELLED: u8 = 3;

/// Which of Lemke's runs a pivot is taken in ([`super::lemke`]): from the
/// warm starts, from the covering vector (cold), on the perturbed problem
/// from the warm starts or cold, or in the retries. A [`Watch`] counts the
/// pivots of each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Run {
    /// From a warm start, on the LCP as given.
    Warm,
    /// From the covering vector, on the LCP as given.
    Cold,
    /// On the perturbed LCP, from a warm start.
    PerturbedWarm,
    /// On the perturbed LCP, from the covering vector.
    PerturbedCold,
    /// The retries: after a repeated or ill-conditioned basis (a larger
    /// pivot tolerance, a covering vector of distinct entries), and the
    /// restarts from other complementary bases after a ray.
    Retry,
}

impl Run {
    /// Every kind, in the order of [`Watch::pivots_by_run`].
    pub const ALL: [Self; 5] = [
        Self::Warm,
        Self::Cold,
        Self::PerturbedWarm,
        Self::PerturbedCold,
        Self::Retry,
    ];

    /// How a report names it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Warm => "warm",
            Self::Cold => "cold",
            Self::PerturbedWarm => "perturbed from a warm start",
            Self::PerturbedCold => "perturbed cold",
            Self::Retry => "retries",
        }
    }
}

/// A step watched from another thread (the viewer's worker): the pivots its
/// budgets have counted so far, and a request to stop. A cancelled step's
/// pivot loops and NSGS's sweeps end at their next pivot or sweep, and the
/// step fails; the watcher drops it.
#[derive(Debug, Default)]
pub struct Watch {
    pivots: AtomicU64,
    by_run: [AtomicU64; Run::ALL.len()],
    cancelled: AtomicBool,
}

impl Watch {
    /// Lemke pivots taken so far, over every budget started under it.
    pub fn pivots(&self) -> u64 {
        self.pivots.load(Ordering::Relaxed)
    }

    /// The pivots of [`Self::pivots`] by the run they were taken in, in the
    /// order of [`Run::ALL`].
    pub fn pivots_by_run(&self) -> [u64; Run::ALL.len()] {
        std::array::from_fn(|i| self.by_run[i].load(Ordering::Relaxed))
    }

    /// Asks the step to stop.
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::Relaxed);
    }

    /// Whether the step was asked to stop.
    pub fn cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed)
    }
}

/// One step's budget: its limits, the pivots spent so far and whether it is
/// spent.
#[derive(Debug)]
pub struct Budget {
    limits: Limits,
    deadline: Option<Instant>,
    pivots: AtomicU64,
    over: AtomicU8,
    /// The watch of the thread that started it ([`watching`]).
    watch: Option<Arc<Watch>>,
}

impl Budget {
    /// A fresh budget with `limits`, its clock starting now.
    pub fn start(limits: Limits) -> Arc<Self> {
        let deadline = limits
            .max_seconds
            .and_then(|s| Duration::try_from_secs_f64(s).ok())
            .and_then(|d| Instant::now().checked_add(d));
        Arc::new(Self {
            limits,
            deadline,
            pivots: AtomicU64::new(0),
            over: AtomicU8::new(WITHIN),
            watch: WATCH.with(|w| w.borrow().clone()),
        })
    }

    /// Pivots taken so far.
    pub fn pivots(&self) -> u64 {
        self.pivots.load(Ordering::Relaxed)
    }

    /// The limit the step went over, if it did.
    pub fn overrun(&self) -> Option<Overrun> {
        match self.over.load(Ordering::Relaxed) {
            PIVOTS => self.limits.max_pivots.map(Overrun::Pivots),
            SECONDS => self.limits.max_seconds.map(Overrun::Seconds),
            _ => None,
        }
    }

    /// Counts one pivot about to be taken; `true` when the budget does not
    /// allow it (and from then on for every later pivot of the step).
    fn take_pivot(&self) -> bool {
        if self.over.load(Ordering::Relaxed) != WITHIN {
            return true;
        }
        if let Some(watch) = &self.watch {
            if watch.cancelled() {
                self.over.store(CANCELLED, Ordering::Relaxed);
                return true;
            }
            watch.pivots.fetch_add(1, Ordering::Relaxed);
            watch.by_run[RUN.with(Cell::get) as usize].fetch_add(1, Ordering::Relaxed);
        }
        let spent = self.pivots.fetch_add(1, Ordering::Relaxed) + 1;
        let over = if self.limits.max_pivots.is_some_and(|most| spent > most) {
            PIVOTS
        } else if self.deadline.is_some_and(|d| Instant::now() > d) {
            SECONDS
        } else {
            return false;
        };
        // The refused pivot is not taken.
        self.pivots.fetch_sub(1, Ordering::Relaxed);
        self.over.store(over, Ordering::Relaxed);
        true
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<Budget>>> = const { RefCell::new(None) };
    static WATCH: RefCell<Option<Arc<Watch>>> = const { RefCell::new(None) };
    static RUN: Cell<Run> = const { Cell::new(Run::Cold) };
}

/// Runs `f` (Lemke's pivots) as `run` on this thread, for the counts of a
/// [`Watch`]; the run before is restored after.
pub(crate) fn running<R>(run: Run, f: impl FnOnce() -> R) -> R {
    struct Restore(Run);
    impl Drop for Restore {
        fn drop(&mut self) {
            RUN.with(|r| r.set(self.0));
        }
    }
    let _restore = Restore(RUN.with(|r| r.replace(run)));
    f()
}

/// Runs `f` (a step) with `watch` watching every budget started on this
/// thread meanwhile, then restores the watch before, also when `f` panics.
pub fn watching<R>(watch: Arc<Watch>, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<Arc<Watch>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let before = self.0.take();
            WATCH.with(|w| *w.borrow_mut() = before);
        }
    }
    let before = WATCH.with(|w| w.replace(Some(watch)));
    let _restore = Restore(before);
    f()
}

/// Whether the step this thread works for was cancelled ([`Watch::cancel`]):
/// NSGS's sweeps stop.
pub fn cancelled() -> bool {
    CURRENT.with(|c| {
        c.borrow()
            .as_ref()
            .and_then(|b| b.watch.as_ref())
            .is_some_and(|w| w.cancelled())
    })
}

/// Runs `f` with `budget` as this thread's budget (none: nothing is
/// counted), then restores the one before, also when `f` panics.
pub fn within<R>(budget: Option<Arc<Budget>>, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<Arc<Budget>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let before = self.0.take();
            CURRENT.with(|c| *c.borrow_mut() = before);
        }
    }
    let before = CURRENT.with(|c| c.replace(budget));
    let _restore = Restore(before);
    f()
}

/// This thread's budget, to hand to another thread that works for the same
/// step.
pub fn current() -> Option<Arc<Budget>> {
    CURRENT.with(|c| c.borrow().clone())
}

/// Counts one pivot against this thread's budget; `true` when the pivot is
/// not allowed (the solve ends with [`super::LcpStatus::OverBudget`]).
pub(crate) fn take_pivot() -> bool {
    CURRENT.with(|c| c.borrow().as_ref().is_some_and(|b| b.take_pivot()))
}

/// Whether this thread's budget is spent: a solver's fallbacks stop trying.
pub fn spent() -> bool {
    CURRENT.with(|c| {
        c.borrow()
            .as_ref()
            .is_some_and(|b| b.over.load(Ordering::Relaxed) != WITHIN)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pivot_past_the_limit_is_refused_and_every_later_one_too() {
        let budget = Budget::start(Limits {
            max_pivots: Some(3),
            max_seconds: None,
        });
        let refused: Vec<bool> = within(Some(budget.clone()), || {
            (0..5).map(|_| take_pivot()).collect()
        });
        assert_eq!(refused, [false, false, false, true, true]);
        assert_eq!(budget.overrun(), Some(Overrun::Pivots(3)));
        assert_eq!(budget.pivots(), 3);
        assert!(!take_pivot(), "outside `within` nothing is counted");
        assert!(!spent());
    }

    #[test]
    fn a_deadline_in_the_past_refuses_the_first_pivot() {
        let budget = Budget::start(Limits {
            max_pivots: None,
            max_seconds: Some(0.0),
        });
        std::thread::sleep(Duration::from_millis(1));
        within(Some(budget.clone()), || {
            assert!(take_pivot());
            assert!(spent());
        });
        assert_eq!(budget.overrun(), Some(Overrun::Seconds(0.0)));
    }

    #[test]
    fn the_budget_before_is_restored_after_a_panic() {
        let outer = Budget::start(Limits::NONE);
        within(Some(outer.clone()), || {
            let inner = Budget::start(Limits::NONE);
            let caught = std::panic::catch_unwind(|| within(Some(inner), || panic!("inside")));
            assert!(caught.is_err());
            assert!(current().is_some_and(|b| Arc::ptr_eq(&b, &outer)));
        });
        assert!(current().is_none());
    }

    #[test]
    fn a_watch_counts_every_budget_under_it_and_cancels_the_step() {
        let watch = Arc::new(Watch::default());
        let (first, second) = watching(watch.clone(), || {
            (Budget::start(Limits::NONE), Budget::start(Limits::NONE))
        });
        assert!(
            Budget::start(Limits::NONE).watch.is_none(),
            "outside `watching`"
        );
        within(Some(first.clone()), || {
            assert!(!take_pivot() && !take_pivot());
            assert!(!cancelled());
        });
        within(Some(second.clone()), || {
            running(Run::PerturbedWarm, || assert!(!take_pivot()));
        });
        assert_eq!(watch.pivots(), 3);
        assert_eq!(watch.pivots_by_run(), [0, 2, 1, 0, 0]);
        watch.cancel();
        within(Some(second.clone()), || {
            assert!(cancelled());
            assert!(take_pivot(), "a cancelled step takes no pivot");
            assert!(spent());
        });
        assert_eq!(watch.pivots(), 3);
        assert_eq!(second.overrun(), None);
    }
}
