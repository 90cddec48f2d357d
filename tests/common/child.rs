//! A real `armsim` process for tests that need one of their own (its own threads, its own
//! ports): started headless in real time, its log lines gathered on a channel, killed on drop.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A running armsim whose log lines arrive on a channel; killed on drop.
pub struct Armsim {
    pub child: Child,
    lines: mpsc::Receiver<String>,
    /// Every line read so far.
    pub log: Vec<String>,
}

impl Drop for Armsim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Armsim {
    /// Starts `armsim --headless --realtime args…` logging at info level, its certificate (if
    /// it serves the headset page) in a scratch folder named after `name`.
    pub fn start(name: &str, args: &[&str]) -> Self {
        Self::spawn(name, &[], "--realtime", args)
    }

    /// [`start`](Self::start) with `--fast`: for a test whose figures must not hang on how
    /// busy the machine is (a real-time frame that runs late covers more steps).
    pub fn start_fast(name: &str, args: &[&str]) -> Self {
        Self::spawn(name, &[], "--fast", args)
    }

    /// [`start`](Self::start) under `wrapper` (a command and its arguments, e.g. GNU `timeout
    /// -s TERM 600`), which then runs armsim; `child` is the wrapper's process.
    pub fn start_under(name: &str, wrapper: &[&str], args: &[&str]) -> Self {
        Self::spawn(name, wrapper, "--realtime", args)
    }

    fn spawn(name: &str, wrapper: &[&str], clock: &str, args: &[&str]) -> Self {
        let config =
            std::env::temp_dir().join(format!("armsim-child-{name}-{}", std::process::id()));
        let armsim = env!("CARGO_BIN_EXE_armsim");
        let mut command = match wrapper.split_first() {
            Some((program, rest)) => {
                let mut c = Command::new(program);
                c.args(rest).arg(armsim);
                c
            }
            None => Command::new(armsim),
        };
        let mut child = command
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1")
            .env("ARMSIM_CONFIG_DIR", &config)
            .args(["--headless", clock])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("armsim starts");
        let (tx, lines) = mpsc::channel();
        for stream in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    let _ = tx.send(line);
                }
            });
        }
        Self {
            child,
            lines,
            log: Vec::new(),
        }
    }

    /// Reads the log until a line contains `what`; returns that line.
    pub fn wait_for(&mut self, what: &str) -> String {
        self.line_after_within(0, &[what], Duration::from_secs(60))
            .unwrap_or_else(|| {
                panic!(
                    "no log line with {what:?}; the log:\n{}",
                    self.log.join("\n")
                )
            })
    }

    /// Reads the log until a line from index `from` on (`log.len()` before an action) holds
    /// every one of `what`; returns that line. For a line an action causes, when an earlier
    /// line may hold the same words.
    pub fn wait_for_after(&mut self, from: usize, what: &[&str]) -> String {
        self.line_after_within(from, what, Duration::from_secs(60))
            .unwrap_or_else(|| {
                panic!(
                    "no log line with {what:?} after line {from}; the log:\n{}",
                    self.log.join("\n")
                )
            })
    }

    /// [`wait_for_after`](Self::wait_for_after) for at most `wait`: `None` if no such line
    /// came by then (for an action that may need repeating, such as a best-effort sample).
    pub fn line_after_within(
        &mut self,
        from: usize,
        what: &[&str],
        wait: Duration,
    ) -> Option<String> {
        let deadline = Instant::now() + wait;
        let matches = |l: &str| what.iter().all(|w| l.contains(w));
        if let Some(l) = self.log.iter().skip(from).find(|l| matches(l)) {
            return Some(l.clone());
        }
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self.lines.recv_timeout(left).ok()?;
            self.log.push(line.clone());
            if self.log.len() > from && matches(&line) {
                return Some(line);
            }
        }
    }

    /// Stops armsim and returns its whole log: what was read so far and the rest (for a failing
    /// test to show).
    pub fn stop_and_read_log(&mut self) -> &[String] {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // The readers end at the pipes' end, and the channel with them.
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(5)) {
            self.log.push(line);
        }
        &self.log
    }

    /// Where `protocol` says it is listening (`lockstep: listening on 127.0.0.1:PORT …`).
    pub fn listening(&mut self, protocol: &str) -> SocketAddr {
        let line = self.wait_for(&format!("{protocol}: listening on "));
        let rest = line.split("listening on ").nth(1).unwrap();
        let addr = rest
            .trim_start_matches("ws://")
            .split(['/', ' '])
            .next()
            .unwrap();
        addr.parse()
            .unwrap_or_else(|e| panic!("{addr:?} in {line:?}: {e}"))
    }
}
