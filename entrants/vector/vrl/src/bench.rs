//! Programs' cost on the corpus, each run as the remap transform runs it
//! (`program::Runner`) on the same decoded events, interleaved pass by
//! pass so that the machine's drift falls on every program alike.
//!
//! The cost is the CPU time of the running thread, not the wall clock: on
//! a machine busy with other work the wall clock also counts the time the
//! thread waits for a core, which is the other work's, not the program's.
//! The decode is left out: it is the kafka source's work, the same
//! whatever the program. Each run's events are copied from the decoded
//! corpus before the clock starts, since a run consumes them.

use std::hint::black_box;

use vrl::compiler::Program;
use vrl::value::Value;

use crate::program::Runner;

/// What a program cost in each round, in nanoseconds of CPU time a
/// message.
pub struct Costs {
    pub rounds: Vec<f64>,
}

/// The CPU time the calling thread has used, in nanoseconds.
pub fn thread_cpu_ns() -> Result<u128, String> {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given and nothing
    // else; t lives across the call.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    if rc != 0 {
        return Err(format!(
            "clock_gettime(CLOCK_THREAD_CPUTIME_ID): {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(t.tv_sec as u128 * 1_000_000_000 + t.tv_nsec as u128)
}

/// Runs each program over `events`, `passes` times a round for `rounds`
/// rounds. Within a round the programs take turns pass by pass, and which
/// goes first alternates. A run that fails is an error: a program
/// measured must handle every message.
pub fn measure(
    programs: &[&Program],
    events: &[Value],
    rounds: usize,
    passes: usize,
) -> Result<Vec<Costs>, String> {
    let messages = events.len() * passes;
    if messages == 0 {
        return Err("nothing to run: no message, or no pass".into());
    }
    let mut costs: Vec<Costs> = programs
        .iter()
        .map(|_| Costs { rounds: Vec::new() })
        .collect();
    let mut runner = Runner::default();
    for _ in 0..rounds {
        let mut spent = vec![0u128; programs.len()];
        for pass in 0..passes {
            let mut order: Vec<usize> = (0..programs.len()).collect();
            if pass % 2 == 1 {
                order.reverse();
            }
            for i in order {
                let input = events.to_vec();
                let start = thread_cpu_ns()?;
                for (m, event) in input.into_iter().enumerate() {
                    let rows = runner
                        .run(programs[i], event)
                        .map_err(|e| format!("program {i}, message {m}: {e}"))?;
                    black_box(rows);
                }
                spent[i] += thread_cpu_ns()? - start;
            }
        }
        for (c, ns) in costs.iter_mut().zip(spent) {
            c.rounds.push(ns as f64 / messages as f64);
        }
    }
    Ok(costs)
}

/// The nearest-rank quantile q (0 to 1; 0.5 the median) of some figures.
pub fn quantile(figures: &[f64], q: f64) -> f64 {
    let mut sorted = figures.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[rank]
}

#[cfg(test)]
mod tests {
    use super::{black_box, quantile, thread_cpu_ns};

    #[test]
    fn quantiles_are_nearest_rank() {
        let f = [5.0, 1.0, 4.0, 2.0, 3.0];
        assert_eq!(quantile(&f, 0.0), 1.0);
        assert_eq!(quantile(&f, 0.5), 3.0);
        assert_eq!(quantile(&f, 1.0), 5.0);
        assert_eq!(quantile(&f, 0.1), 1.0);
        assert_eq!(quantile(&f, 0.9), 5.0);
    }

    #[test]
    fn the_threads_cpu_clock_advances_with_work_only() {
        let before = thread_cpu_ns().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(50));
        let slept = thread_cpu_ns().unwrap() - before;
        // Asleep, the thread uses next to no CPU: far less than the 50 ms
        // the wall clock counts.
        assert!(slept < 25_000_000, "{slept} ns of CPU asleep");
        let start = thread_cpu_ns().unwrap();
        let mut x = 0u64;
        for i in 0..10_000_000u64 {
            x = black_box(x.wrapping_add(i));
        }
        assert!(thread_cpu_ns().unwrap() > start);
    }
}
