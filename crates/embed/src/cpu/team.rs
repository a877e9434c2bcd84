//! A team of pool threads that stays awake for one forward pass.
//!
//! A forward is ~30 short parallel steps (every matrix product, attention, the norms), each a
//! few hundred microseconds or less. Through plain rayon each step ends with the other worker
//! going to sleep and the next one begins by waking it: on the 2-core KVM machine that cost
//! ~30 context switches and 60-90 us per step (measured with `perf stat`: 14,800 switches over
//! 500 forwards of 64 tokens, wall time 2.7 ms above the ideal half). Here the helpers stay
//! runnable between steps for the length of one forward only (a short spin, then yielding the
//! core: see [`Backoff`]), so handing out a step costs a cache-line round trip; ONNX Runtime's
//! intra-op pool does the same.
//!
//! Robust to a busy pool: helpers are rayon jobs, and a helper that has not started yet (its
//! worker is busy elsewhere) is simply not given work; the calling thread does its share.

use std::any::Any;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};

/// A step: `job(part, parts)` does part `part` of `parts` equal shares.
type Job<'a> = dyn Fn(usize, usize) + Sync + 'a;

/// The calling thread plus the helpers that have arrived.
pub(crate) struct Team {
    /// `seq << 16 | parts` of the newest step; helpers with an id below `parts` run it.
    step: AtomicU64,
    /// Points to a `&Job` on the stack of [`Team::split`], valid until every part is done.
    job: AtomicPtr<()>,
    /// Helper parts of the current step that have finished.
    done: AtomicUsize,
    /// Helpers spinning in [`Team::help`]; each takes the next id (1, 2, ...) on arrival.
    arrived: AtomicUsize,
    quit: AtomicBool,
    panic: Mutex<Option<Box<dyn Any + Send>>>,
}

impl Team {
    fn new() -> Self {
        Self {
            step: AtomicU64::new(0),
            job: AtomicPtr::new(std::ptr::null_mut()),
            done: AtomicUsize::new(0),
            arrived: AtomicUsize::new(0),
            quit: AtomicBool::new(false),
            panic: Mutex::new(None),
        }
    }

    /// A team of one: [`Team::split`] runs every step on the calling thread.
    pub fn solo() -> Self {
        Self::new()
    }

    /// Runs `body` with the calling thread and up to `helpers` rayon workers as a team. Outside
    /// the pool, `body` itself runs on a worker (rayon's scope), so the caller just waits.
    pub fn run<R: Send>(helpers: usize, body: impl FnOnce(&Team) -> R + Send) -> R {
        let team = Team::new();
        rayon::scope(|s| {
            for _ in 0..helpers {
                s.spawn(|_| team.help());
            }
            // Helpers must stop spinning however `body` ends.
            struct Quit<'a>(&'a AtomicBool);
            impl Drop for Quit<'_> {
                fn drop(&mut self) {
                    self.0.store(true, Ordering::Release);
                }
            }
            let _quit = Quit(&team.quit);
            body(&team)
        })
    }

    /// Threads a step would use now: the caller plus the helpers that have arrived.
    pub fn size(&self) -> usize {
        1 + self.arrived.load(Ordering::Acquire)
    }

    /// Runs `job(part, parts)` for every part across the team, the caller taking part 0, and
    /// returns when all are done. `parts` is the team's size at the call.
    ///
    /// Panic-safe: helpers read the job through a pointer into this call's frame, so a panic
    /// in any part (the caller's included) is held until every part has finished, then
    /// resumed on the calling thread.
    pub fn split(&self, job: &Job<'_>) {
        let parts = self.size();
        if parts == 1 {
            job(0, 1);
            return;
        }
        let seq = (self.step.load(Ordering::Relaxed) >> 16) + 1;
        let job_ref: &Job<'_> = job;
        self.job.store(&job_ref as *const &Job<'_> as *mut (), Ordering::Relaxed);
        self.done.store(0, Ordering::Relaxed);
        // Release: a helper that sees this step also sees the job and the reset count.
        self.step.store(seq << 16 | parts as u64, Ordering::Release);
        let mine = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(0, parts)));
        // Leaving before the helpers finish would free the `&Job` they are reading.
        let mut backoff = Backoff::default();
        while self.done.load(Ordering::Acquire) < parts - 1 {
            backoff.wait();
        }
        if let Err(p) = mine {
            std::panic::resume_unwind(p);
        }
        if let Some(p) = self.panic.lock().map(|mut g| g.take()).unwrap_or(None) {
            std::panic::resume_unwind(p);
        }
    }

    /// A helper's loop: take an id, run each step's part of that id until told to quit.
    fn help(&self) {
        if self.quit.load(Ordering::Acquire) {
            return;
        }
        // The last step seen is read before arriving: a caller that counts this helper in a
        // step published that step after the arrival, so the helper cannot miss it.
        let mut seen = self.step.load(Ordering::Acquire) >> 16;
        let id = self.arrived.fetch_add(1, Ordering::AcqRel) + 1;
        let mut backoff = Backoff::default();
        loop {
            let step = self.step.load(Ordering::Acquire);
            if step >> 16 == seen {
                if self.quit.load(Ordering::Acquire) {
                    return;
                }
                backoff.wait();
                continue;
            }
            backoff = Backoff::default();
            seen = step >> 16;
            let parts = (step & 0xffff) as usize;
            if id >= parts {
                // Arrived after this step was handed out: the caller does its share.
                continue;
            }
            // SAFETY: `split` stored a pointer to a live `&Job` before publishing this step
            // (Release/Acquire on `step`) and does not return, so the job outlives this call,
            // until `done` counts this part.
            let job = unsafe { *(self.job.load(Ordering::Relaxed) as *const &Job<'_>) };
            let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(id, parts)));
            if let (Err(p), Ok(mut slot)) = (run, self.panic.lock()) {
                slot.get_or_insert(p);
            }
            self.done.fetch_add(1, Ordering::AcqRel);
        }
    }
}

/// Spins, then yields the core. Spinning alone is fast while each thread has a core to itself,
/// but when a third thread is runnable (another process, a thread of the host program) a
/// spinner can hold the core the thread it waits for needs, for a whole scheduler slice.
#[derive(Default)]
struct Backoff(u32);

impl Backoff {
    /// Spins (a `pause` each, 10-40 ns) before the first yield. Measured on the 2-core VM with
    /// `switchyard bench --tasks manifests/cases.jsonl`: pure spinning took the embed p95 from
    /// 6.8 to 13 ms (the host program's own threads lost their core to a spinner); 2^12 spins
    /// 7.3 ms, 2^6 7.2 ms with the same p50 and the same 8/24/64-token forward times as pure
    /// spinning, since a yield with nothing else runnable returns at once.
    const SPINS: u32 = 1 << 6;

    fn wait(&mut self) {
        if self.0 < Self::SPINS {
            self.0 += 1;
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
}

/// The `part`-th of `parts` near-equal shares of `0..n`.
pub(crate) fn share(n: usize, part: usize, parts: usize) -> std::ops::Range<usize> {
    (n * part / parts)..(n * (part + 1) / parts)
}

/// The `part`-th of `parts` shares of jobs whose work differs, near-equal in work rather than
/// in count: `cumulative[i]` is the work of jobs `0..i` (so it has one entry more than there are
/// jobs, starting at 0, never decreasing). A share ends at the first job boundary where the
/// work so far reaches its fraction of the total. Equal work gives [`share`]'s split.
pub(crate) fn share_by_work(
    cumulative: &[usize],
    part: usize,
    parts: usize,
) -> std::ops::Range<usize> {
    let n = cumulative.len().saturating_sub(1);
    let total = cumulative.last().copied().unwrap_or(0);
    // The first boundary whose work so far reaches `p / parts` of the total (`n` for the last).
    let boundary = |p: usize| {
        if p >= parts {
            return n;
        }
        let goal = total * p;
        cumulative.partition_point(|&c| c * parts < goal).min(n)
    };
    boundary(part)..boundary(part + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn shares_cover_the_range_once() {
        for n in [0, 1, 5, 36, 48] {
            for parts in 1..5 {
                let all: Vec<usize> = (0..parts).flat_map(|p| share(n, p, parts)).collect();
                assert_eq!(all, (0..n).collect::<Vec<_>>());
            }
        }
    }

    #[test]
    fn shares_by_work_cover_the_range_once_and_balance_the_work() {
        // Equal work splits as `share` does.
        let equal: Vec<usize> = (0..=48).collect();
        for parts in 1..5 {
            for p in 0..parts {
                assert_eq!(share_by_work(&equal, p, parts), share(48, p, parts));
            }
        }
        // A batch of one 512-token text and one 60-token window, 12 heads each, shortest first
        // (as the embedder orders a batch): a split by count gives one thread the whole long
        // text; by work, each thread gets about half of it.
        let work: Vec<usize> = [60usize; 12].iter().chain(&[512; 12]).map(|l| l * l + l).collect();
        let mut cumulative = vec![0usize];
        for w in &work {
            cumulative.push(cumulative[cumulative.len() - 1] + w);
        }
        for parts in 1..5 {
            let shares: Vec<_> = (0..parts).map(|p| share_by_work(&cumulative, p, parts)).collect();
            let all: Vec<usize> = shares.iter().flat_map(|r| r.clone()).collect();
            assert_eq!(all, (0..24).collect::<Vec<_>>());
            let total: usize = work.iter().sum();
            for r in &shares {
                let mine: usize = work[r.clone()].iter().sum();
                // Within one long job of an exact share.
                assert!(mine.abs_diff(total / parts) <= 512 * 512 + 512, "{parts}: {r:?}");
            }
        }
        // Nothing to share.
        assert_eq!(share_by_work(&[0], 0, 2), 0..0);
        assert_eq!(share_by_work(&[], 1, 2), 0..0);
    }

    #[test]
    fn a_panic_in_the_callers_part_waits_for_the_helpers_then_resumes() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        let helpers_done = AtomicUsize::new(0);
        let seen_at_unwind = pool.install(|| {
            Team::run(2, |team| {
                // Both helpers in the team, so the step really is shared.
                let mut backoff = Backoff::default();
                while team.size() < 3 {
                    backoff.wait();
                }
                let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    team.split(&|part, _| {
                        if part == 0 {
                            panic!("the caller's share fails");
                        }
                        std::thread::sleep(std::time::Duration::from_millis(30));
                        helpers_done.fetch_add(1, Ordering::SeqCst);
                    });
                }));
                let message = unwound.unwrap_err().downcast::<&str>().map(|m| *m);
                (helpers_done.load(Ordering::SeqCst), message.ok())
            })
        });
        assert_eq!(seen_at_unwind, (2, Some("the caller's share fails")));
    }

    #[test]
    fn every_part_of_every_step_runs_once() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        let hits: Vec<AtomicUsize> = (0..1000).map(|_| AtomicUsize::new(0)).collect();
        pool.install(|| {
            Team::run(2, |team| {
                for step in 0..100 {
                    team.split(&|part, parts| {
                        for i in share(10, part, parts) {
                            hits[step * 10 + i].fetch_add(1, Ordering::Relaxed);
                        }
                    });
                }
            })
        });
        assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1));
    }

    #[test]
    fn a_busy_pool_leaves_the_caller_to_do_everything() {
        // One thread: the helper job can only start after the body, so the body runs alone.
        let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        let total = pool.install(|| {
            Team::run(1, |team| {
                let sum = AtomicUsize::new(0);
                team.split(&|part, parts| {
                    assert_eq!((part, parts), (0, 1));
                    sum.fetch_add(7, Ordering::Relaxed);
                });
                sum.load(Ordering::Relaxed)
            })
        });
        assert_eq!(total, 7);
    }

    #[test]
    fn a_panic_in_a_helper_reaches_the_caller() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            pool.install(|| {
                Team::run(1, |team| {
                    while team.size() < 2 {
                        std::hint::spin_loop();
                    }
                    team.split(&|part, _| assert_eq!(part, 0, "helper fails"));
                })
            })
        }));
        assert!(result.is_err());
    }
}
