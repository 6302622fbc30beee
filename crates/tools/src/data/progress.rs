//! Progress of a transfer: a bar (entities, rate, ETA) when standard error is a terminal,
//! otherwise a plain line every few seconds, so CI logs stay readable.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How often plain progress lines are printed.
const PLAIN_EVERY: Duration = Duration::from_secs(5);

pub(crate) struct Progress {
    bar: Option<ProgressBar>,
    plain: bool,
    verb: &'static str,
    count: u64,
    started: Instant,
    last_line: Instant,
}

impl Progress {
    /// `verb`: "exported", "imported"; `quiet` prints nothing.
    pub(crate) fn new(verb: &'static str, quiet: bool) -> Progress {
        let terminal = !quiet && std::io::stderr().is_terminal();
        let bar = terminal.then(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template(
                    "{spinner} {msg} {human_pos} entities {per_sec} {elapsed_precise}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        Progress {
            bar,
            plain: !quiet && !terminal,
            verb,
            count: 0,
            started: Instant::now(),
            last_line: Instant::now(),
        }
    }

    /// A known total: the bar shows a bar and an ETA.
    pub(crate) fn set_total(&self, total: u64) {
        if let Some(bar) = &self.bar {
            bar.set_length(total);
            bar.set_style(
                ProgressStyle::with_template(
                    "{msg} [{bar:30}] {human_pos}/{human_len} entities {per_sec} ETA {eta}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
            );
        }
    }

    /// The table being worked on.
    pub(crate) fn table(&self, name: &str) {
        if let Some(bar) = &self.bar {
            bar.set_message(name.to_string());
        }
    }

    pub(crate) fn add(&mut self, n: u64) {
        self.count += n;
        if let Some(bar) = &self.bar {
            bar.inc(n);
        } else if self.plain && self.last_line.elapsed() >= PLAIN_EVERY {
            self.last_line = Instant::now();
            eprintln!(
                "{} {} entities ({:.0}/s)",
                self.verb,
                self.count,
                self.rate()
            );
        }
    }

    pub(crate) fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    pub(crate) fn rate(&self) -> f64 {
        self.count as f64 / self.started.elapsed().as_secs_f64().max(1e-9)
    }

    /// Clears the bar before the summary is printed.
    pub(crate) fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
