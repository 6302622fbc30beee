//! A real PostgreSQL server for the tests: `initdb` into a folder under /tmp as an unprivileged
//! user, `postgres` on a free loopback port, databases on demand, stop/start/restart for the
//! database-restart tests, and everything stopped and removed when the cluster is dropped or the
//! test process ends.
//!
//! [`PgCluster::shared`] is one cluster per test binary (a `OnceLock`): initdb and start-up
//! cost about a second, so tests share it and each takes its own database. A test that stops
//! or restarts the server, or that needs `fsync` on, starts its own with [`PgCluster::start`].
//!
//! Clean-up does not depend on `Drop` (statics are never dropped): a small watchdog shell
//! holds the read end of a pipe whose write end lives in the cluster; when the cluster is
//! dropped or the test process exits (normally, by panic or by SIGKILL) the pipe closes and
//! the watchdog stops the server and deletes the folder.

use std::io::Write;
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The database superuser `initdb` creates; connections use `trust` on loopback only.
pub const SUPERUSER: &str = "tablestore";

/// What to install when PostgreSQL is missing (the one sentence the tests fail with).
const MISSING: &str = "PostgreSQL is not installed (no initdb under `pg_config --bindir`, \
     /usr/lib/postgresql/*/bin or PATH): install it with `apt-get install postgresql` \
     (or set TABLESTORE_PG_BINDIR to the folder holding initdb and postgres)";

/// How the server trades durability for speed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// `fsync`, `synchronous_commit` and `full_page_writes` off: a crash of the machine may
    /// lose data, a crash of a tablestore node may not. The default for tests.
    Fast,
    /// PostgreSQL's defaults: every commit is flushed. For durability tests.
    Durable,
}

/// A running PostgreSQL cluster owned by this test process.
pub struct PgCluster {
    bindir: PathBuf,
    /// The temp folder: `data/` (the cluster), `server.log`, the Unix socket.
    root: PathBuf,
    port: u16,
    /// The uid/gid the server runs as when the tests run as root (PostgreSQL refuses root).
    run_as: Option<(u32, u32)>,
    /// Dropping it closes the watchdog's stdin: the watchdog stops the server and removes `root`.
    watchdog_pipe: Mutex<Option<ChildStdin>>,
    watchdog: Mutex<Option<Child>>,
    databases: AtomicUsize,
}

static SHARED: OnceLock<PgCluster> = OnceLock::new();

impl PgCluster {
    /// The test binary's one cluster (fast settings), started on first use.
    pub fn shared() -> &'static PgCluster {
        SHARED.get_or_init(|| PgCluster::start(Durability::Fast))
    }

    /// A cluster of its own (for restart tests, or `fsync` on). Panics with one sentence
    /// saying what to install when PostgreSQL is missing.
    pub fn start(durability: Durability) -> PgCluster {
        match PgCluster::try_start(durability) {
            Ok(c) => c,
            Err(e) => panic!("{e}"),
        }
    }

    pub fn try_start(durability: Durability) -> Result<PgCluster, String> {
        let bindir = find_bindir().ok_or_else(|| MISSING.to_string())?;
        let run_as = unprivileged_user()?;
        let root = tempfile::Builder::new()
            .prefix("tablestore-pg.")
            .tempdir_in("/tmp")
            .map_err(|e| format!("cannot create a temp folder under /tmp: {e}"))?
            .keep();
        // From here on the watchdog owns `root`: it removes it when we go away.
        let (watchdog, pipe) = spawn_watchdog(&root)?;
        let mut cluster = PgCluster {
            bindir,
            root,
            port: 0,
            run_as,
            watchdog_pipe: Mutex::new(Some(pipe)),
            watchdog: Mutex::new(Some(watchdog)),
            databases: AtomicUsize::new(0),
        };
        if let Some((uid, gid)) = run_as {
            std::os::unix::fs::chown(&cluster.root, Some(uid), Some(gid))
                .map_err(|e| format!("cannot chown {}: {e}", cluster.root.display()))?;
        }
        let out = cluster
            .command("initdb")
            .arg("-D")
            .arg(cluster.data_dir())
            .args(["-U", SUPERUSER, "--auth=trust", "--encoding=UTF8"])
            .args(["--locale=C", "--no-instructions"])
            .output()
            .map_err(|e| format!("cannot run initdb: {e}"))?;
        check(&out, "initdb")?;
        // A free port can be taken between probing and binding: try a few.
        let mut last = String::new();
        for _ in 0..5 {
            cluster.port = free_port();
            cluster.write_settings(durability)?;
            match cluster.try_start_server() {
                Ok(()) => return Ok(cluster),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    /// `postgres://tablestore@127.0.0.1:<port>/<name>`
    pub fn url(&self, database: &str) -> String {
        format!("postgres://{SUPERUSER}@127.0.0.1:{}/{database}", self.port)
    }

    /// The temp folder holding the cluster (removed when the cluster goes away).
    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Creates database `name` (which must be new) and returns its URL.
    pub fn create_database(&self, name: &str) -> String {
        self.psql("postgres", &format!("CREATE DATABASE \"{name}\""));
        self.url(name)
    }

    /// A new database named `<prefix>_<n>` (unique in this cluster) and its URL: tests that
    /// share the cluster never see each other's data.
    pub fn fresh_database(&self, prefix: &str) -> String {
        let n = self.databases.fetch_add(1, Ordering::Relaxed);
        self.create_database(&format!("{prefix}_{n}"))
    }

    /// Runs `sql` on `database` with psql as the superuser; panics with psql's message on error.
    /// Returns what psql printed (unaligned, tuples only).
    pub fn psql(&self, database: &str, sql: &str) -> String {
        let out = self
            .command("psql")
            .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1"])
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
            .args(["-U", SUPERUSER, "-d", database, "-c", sql])
            .output()
            .expect("run psql");
        if let Err(e) = check(&out, "psql") {
            panic!("{e}\n(sql: {sql})");
        }
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// Stops the server (fast shutdown: open connections are cut).
    pub fn stop(&self) {
        let out = self
            .pg_ctl()
            .args(["stop", "-m", "fast", "-w", "-t", "60"])
            .output()
            .expect("run pg_ctl");
        if let Err(e) = check(&out, "pg_ctl stop") {
            panic!("{e}");
        }
    }

    /// Starts the server again on the same port and data.
    pub fn start_again(&self) {
        if let Err(e) = self.try_start_server() {
            panic!("{e}");
        }
    }

    pub fn restart(&self) {
        self.stop();
        self.start_again();
    }

    /// Whether the server accepts connections now.
    pub fn is_ready(&self) -> bool {
        self.command("pg_isready")
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string(), "-t", "1"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .map(|s| s.success())
            .unwrap_or(false)
    }

    /// The server's log so far (for failure messages).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.root.join("server.log")).unwrap_or_default()
    }

    fn data_dir(&self) -> PathBuf {
        self.root.join("data")
    }

    fn try_start_server(&self) -> Result<(), String> {
        let out = self
            .pg_ctl()
            .arg("-l")
            .arg(self.root.join("server.log"))
            .args(["start", "-w", "-t", "60"])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run pg_ctl: {e}"))?;
        check(&out, "pg_ctl start").map_err(|e| format!("{e}\n{}", self.log()))
    }

    /// Loopback only, the socket in our folder, and the durability choice.
    fn write_settings(&self, durability: Durability) -> Result<(), String> {
        let mut settings = format!(
            "port = {}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{}'\n\
             max_connections = 200\nshared_buffers = 32MB\n",
            self.port,
            self.root.display()
        );
        if durability == Durability::Fast {
            settings.push_str("fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n");
        }
        // postgresql.auto.conf is read last, so a second write (a retry on another port) wins.
        std::fs::write(self.data_dir().join("postgresql.auto.conf"), settings)
            .map_err(|e| format!("cannot write postgresql.auto.conf: {e}"))
    }

    fn pg_ctl(&self) -> Command {
        let mut c = self.command("pg_ctl");
        c.arg("-D").arg(self.data_dir());
        c
    }

    /// A PostgreSQL program, run as the unprivileged user when we are root.
    fn command(&self, program: &str) -> Command {
        let mut c = Command::new(self.bindir.join(program));
        c.env_remove("PGDATA").env("PGCONNECT_TIMEOUT", "10");
        if let Some((uid, gid)) = self.run_as {
            c.uid(uid).gid(gid).current_dir(&self.root);
        }
        c
    }
}

impl Drop for PgCluster {
    fn drop(&mut self) {
        // Closing the pipe tells the watchdog to stop the server and remove the folder.
        drop(self.watchdog_pipe.lock().ok().and_then(|mut p| p.take()));
        if let Some(mut w) = self.watchdog.lock().ok().and_then(|mut w| w.take()) {
            let _ = w.wait();
        }
    }
}

/// `TABLESTORE_PG_BINDIR`, `pg_config --bindir`, the newest /usr/lib/postgresql/*/bin, then
/// PATH: the first folder holding both `initdb` and `postgres`.
fn find_bindir() -> Option<PathBuf> {
    let has_both = |d: &Path| d.join("initdb").is_file() && d.join("postgres").is_file();
    let mut candidates = Vec::new();
    if let Some(d) = std::env::var_os("TABLESTORE_PG_BINDIR") {
        candidates.push(PathBuf::from(d));
    }
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output() {
        if out.status.success() {
            candidates.push(PathBuf::from(
                String::from_utf8_lossy(&out.stdout).trim().to_string(),
            ));
        }
    }
    if let Ok(entries) = std::fs::read_dir("/usr/lib/postgresql") {
        let mut versions: Vec<(u32, PathBuf)> = entries
            .filter_map(Result::ok)
            .filter_map(|e| {
                let v = e.file_name().to_string_lossy().parse::<u32>().ok()?;
                Some((v, e.path().join("bin")))
            })
            .collect();
        versions.sort();
        candidates.extend(versions.into_iter().rev().map(|(_, p)| p));
    }
    if let Some(path) = std::env::var_os("PATH") {
        candidates.extend(std::env::split_paths(&path));
    }
    candidates.into_iter().find(|d| has_both(d))
}

/// When we are root: the uid/gid of `postgres` (Debian's package creates it) or of a system
/// user `tablestore-pg` created now. Otherwise `None` (run as ourselves).
fn unprivileged_user() -> Result<Option<(u32, u32)>, String> {
    if id(&["-u"]) != Some(0) {
        return Ok(None);
    }
    for user in ["postgres", "tablestore-pg"] {
        if let (Some(uid), Some(gid)) = (id(&["-u", user]), id(&["-g", user])) {
            return Ok(Some((uid, gid)));
        }
    }
    let status = Command::new("useradd")
        .args([
            "--system",
            "--no-create-home",
            "--shell",
            "/usr/sbin/nologin",
        ])
        .arg("tablestore-pg")
        .status();
    match (
        status,
        id(&["-u", "tablestore-pg"]),
        id(&["-g", "tablestore-pg"]),
    ) {
        (_, Some(uid), Some(gid)) => Ok(Some((uid, gid))),
        (s, _, _) => Err(format!(
            "PostgreSQL refuses to run as root and there is no `postgres` user; creating the \
             system user `tablestore-pg` failed ({s:?}): create an unprivileged user named \
             `postgres` or `tablestore-pg`"
        )),
    }
}

fn id(args: &[&str]) -> Option<u32> {
    let out = Command::new("id").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// A root-run shell that waits for its stdin to close, then stops the server (fast, then
/// SIGKILL after 10 s) and removes the folder. Runs as us, so it can remove what the
/// unprivileged user created.
fn spawn_watchdog(root: &Path) -> Result<(Child, ChildStdin), String> {
    const SCRIPT: &str = r#"
        cat >/dev/null
        pidfile="$1/data/postmaster.pid"
        if [ -f "$pidfile" ]; then
          pid=$(head -n 1 "$pidfile")
          kill -INT "$pid" 2>/dev/null
          i=0
          while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
          kill -KILL "$pid" 2>/dev/null
        fi
        rm -rf "$1"
    "#;
    let mut child = Command::new("sh")
        .args(["-c", SCRIPT, "tablestore-pg-watchdog"])
        .arg(root)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        // Its own process group: a Ctrl-C to the test run must not kill it before it cleans up.
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start the clean-up watchdog (sh): {e}"))?;
    let mut pipe = child.stdin.take().expect("piped stdin");
    let _ = pipe.flush();
    Ok((child, pipe))
}

fn check(out: &Output, what: &str) -> Result<(), String> {
    if out.status.success() {
        return Ok(());
    }
    Err(format!(
        "{what} failed ({}): {}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr).trim(),
        String::from_utf8_lossy(&out.stdout).trim()
    ))
}

/// Waits up to `limit` for `ready`; true when it became true.
pub fn wait_until(limit: Duration, mut ready: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if ready() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    ready()
}
