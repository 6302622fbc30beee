//! `tablestore export` / `import`, `--seed` and `--from-azurite` as a user runs them: the
//! binary on data folders and against running servers on loopback.

use crate::common;

use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::child::{binary, ChildServer, Signer};
use tablestore::config::{DEV_ACCOUNT, DEV_ACCOUNT_KEY};

fn run(args: &[&str]) -> Output {
    Command::new(binary())
        .args(args)
        .env_remove("AZURITE_ACCOUNTS")
        .stdin(Stdio::null())
        .output()
        .expect("run tablestore")
}

/// Runs a command that must succeed; returns its stdout.
fn ok(args: &[&str]) -> String {
    let out = run(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "tablestore {args:?} failed: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs a command that must fail with one clear sentence; returns its stderr.
fn fails(args: &[&str]) -> String {
    let out = run(args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "tablestore {args:?}: {stderr}");
    assert!(
        !stderr.contains("panicked") && !stderr.contains("Error("),
        "{stderr}"
    );
    stderr
}

/// Exports every table of the data folder `data` to the folder `out`; returns the summary.
fn export_folder(data: &Path, out: &Path) -> String {
    ok(&[
        "export",
        "--location",
        data.to_str().unwrap(),
        "-q",
        "--out",
        out.to_str().unwrap(),
    ])
}

/// `n` entities over partitions of 150 (so batches split at 100 and at partition ends), with
/// typed properties of every kind.
fn fixture_lines(n: usize, out: &mut String) {
    for i in 0..n {
        let _ = writeln!(
            out,
            r#"{{"PartitionKey":"p{:04}","RowKey":"r'{:07}%~","Name":"ent {i}","Count":{},"Big@odata.type":"Edm.Int64","Big":"{}","Ratio":{}.5,"Flag":{},"When@odata.type":"Edm.DateTime","When":"2024-02-29T12:34:56.1234567Z","Id@odata.type":"Edm.Guid","Id":"12345678-1234-5678-9abc-{:012}","Raw@odata.type":"Edm.Binary","Raw":"AAH+/w=="}}"#,
            i / 150,
            i,
            i as i32 - 1000,
            i64::MAX - i as i64,
            i,
            i % 2 == 0,
            i
        );
    }
}

fn write_fixture(dir: &Path, table: &str, n: usize) -> std::path::PathBuf {
    let mut text = String::new();
    fixture_lines(n, &mut text);
    let path = dir.join(format!("{table}.jsonl"));
    std::fs::write(&path, text).unwrap();
    path
}

/// A JSONL export's lines without their Timestamps (the target stamps its own).
fn without_timestamps(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| {
            let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
            let o = v.as_object_mut().unwrap();
            o.remove("Timestamp");
            o.remove("Timestamp@odata.type");
            serde_json::to_string(&v).unwrap()
        })
        .collect()
}

fn connection_string(server: &ChildServer) -> String {
    format!(
        "DefaultEndpointsProtocol=http;AccountName={DEV_ACCOUNT};AccountKey={DEV_ACCOUNT_KEY};TableEndpoint={}/{DEV_ACCOUNT};",
        server.endpoint()
    )
}

#[test]
fn copy_between_two_running_servers_with_shared_key_and_with_sas() {
    let work = tempfile::tempdir().unwrap();
    let a = ChildServer::start(&work.path().join("a"), &[]);
    let b = ChildServer::start(&work.path().join("b"), &[]);
    let cs_a = connection_string(&a);
    let fixture = write_fixture(work.path(), "Orders", 420);

    // Into server A over HTTP with Shared Key (connection string).
    let out = ok(&[
        "import",
        "--connection-string",
        &cs_a,
        "-q",
        fixture.to_str().unwrap(),
    ]);
    assert!(out.contains("imported 420 entities in 1 table"), "{out}");

    // A → folder (Shared Key) → B (URL + SAS) → folder (URL + account key).
    let from_a = work.path().join("from-a");
    ok(&[
        "export",
        "--connection-string",
        &cs_a,
        "-q",
        "--out",
        from_a.to_str().unwrap(),
    ]);
    let b_url = format!("{}/{DEV_ACCOUNT}", b.endpoint());
    let sas = Signer::dev().account_sas_all();
    let out = ok(&[
        "import",
        "--url",
        &b_url,
        "--sas",
        &sas,
        "-q",
        from_a.to_str().unwrap(),
    ]);
    assert!(out.contains("imported 420 entities"), "{out}");
    let from_b = work.path().join("from-b");
    ok(&[
        "export",
        "--url",
        &b_url,
        "--account-key",
        DEV_ACCOUNT_KEY,
        "-q",
        "--out",
        from_b.to_str().unwrap(),
    ]);
    let original: Vec<String> = {
        let mut lines = without_timestamps(&fixture);
        lines.sort();
        lines
    };
    let a_lines = without_timestamps(&from_a.join(DEV_ACCOUNT).join("Orders.jsonl"));
    let b_lines = without_timestamps(&from_b.join(DEV_ACCOUNT).join("Orders.jsonl"));
    assert_eq!(a_lines.len(), 420);
    assert_eq!(a_lines, b_lines);
    let mut sorted = a_lines.clone();
    sorted.sort();
    assert_eq!(sorted, original, "every typed value arrives as it was");

    // Only what a filter selects; a wrong key is refused with the service's answer.
    let filtered = work.path().join("filtered.jsonl");
    ok(&[
        "export",
        "--connection-string",
        &cs_a,
        "-q",
        "--table",
        "orders",
        "--filter",
        "PartitionKey eq 'p0001' and Count lt -800",
        "--out",
        filtered.to_str().unwrap(),
    ]);
    assert_eq!(without_timestamps(&filtered).len(), 50);
    let e = fails(&[
        "export",
        "--url",
        &b_url,
        "--account-key",
        "AAAA",
        "-q",
        "--out",
        work.path().join("x").to_str().unwrap(),
    ]);
    assert!(
        e.contains("403") && e.contains("AuthenticationFailed"),
        "{e}"
    );
    // Inserting what exists stops with what to do.
    let e = fails(&[
        "import",
        "--url",
        &b_url,
        "--sas",
        &sas,
        "-q",
        from_a.to_str().unwrap(),
    ]);
    assert!(e.contains("already exists") && e.contains("--mode"), "{e}");
    let out = ok(&[
        "import",
        "--url",
        &b_url,
        "--sas",
        &sas,
        "-q",
        "--mode",
        "skip",
        from_a.to_str().unwrap(),
    ]);
    assert!(out.contains("420 already present"), "{out}");
}

#[test]
fn export_resumes_after_kill_9_of_the_exporter() {
    let work = tempfile::tempdir().unwrap();
    let data = work.path().join("data");
    let fixture = write_fixture(work.path(), "Big", 150_000);
    ok(&[
        "import",
        "--location",
        data.to_str().unwrap(),
        "-q",
        fixture.to_str().unwrap(),
    ]);

    let out = work.path().join("out");
    let mut child = Command::new(binary())
        .args([
            "export",
            "--location",
            data.to_str().unwrap(),
            "-q",
            "--out",
        ])
        .arg(&out)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Kill it once it has checkpointed part of the table.
    let progress = out.join(DEV_ACCOUNT).join(".export-progress.json");
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if std::fs::read_to_string(&progress).is_ok_and(|p| p.contains("\"entities\"")) {
            break;
        }
        assert!(Instant::now() < deadline, "no checkpoint within 120 s");
        assert!(
            child.try_wait().unwrap().is_none(),
            "the export ended before it was killed"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!out.join(DEV_ACCOUNT).join("manifest.json").exists());

    let e = fails(&[
        "export",
        "--location",
        data.to_str().unwrap(),
        "-q",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(e.contains("--resume"), "{e}");
    let summary = ok(&[
        "export",
        "--location",
        data.to_str().unwrap(),
        "-q",
        "--resume",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(summary.contains("exported 150000 entities"), "{summary}");
    assert!(!progress.exists());

    let fresh = work.path().join("fresh");
    export_folder(&data, &fresh);
    let resumed = std::fs::read(out.join(DEV_ACCOUNT).join("Big.jsonl")).unwrap();
    let whole = std::fs::read(fresh.join(DEV_ACCOUNT).join("Big.jsonl")).unwrap();
    assert!(
        resumed == whole,
        "the resumed export is the same file as an uninterrupted one"
    );
}

/// An import that creates a data folder gives it the compression `--compression` names (lz4
/// by default), as the server does; an existing folder keeps its own, with a note; the
/// option needs a data folder.
#[test]
fn import_creates_a_data_folder_with_the_compression_asked_for() {
    let work = tempfile::tempdir().unwrap();
    let fixture = write_fixture(work.path(), "Orders", 300);
    let expected = without_timestamps(&fixture);
    // sled's `conf` ends in a binary checksum.
    let read = |data: &Path, file: &str| {
        let bytes = std::fs::read(data.join("__tablestore__").join(file)).unwrap();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    // (--compression, sled's log compressed, store format)
    let cases = [
        (None, false, "2"),
        (Some("lz4"), false, "2"),
        (Some("zstd"), true, "1"),
        (Some("off"), false, "1"),
    ];
    for (asked, log_compressed, format) in cases {
        let data = work
            .path()
            .join(format!("data-{}", asked.unwrap_or("default")));
        let mut args = vec!["import", "--location", data.to_str().unwrap(), "-q"];
        args.extend(asked.iter().flat_map(|c| ["--compression", c]));
        args.push(fixture.to_str().unwrap());
        let out = ok(&args);
        assert!(out.contains("imported 300 entities"), "{asked:?}: {out}");
        assert!(
            read(&data, "conf").contains(&format!("use_compression: {log_compressed}")),
            "{asked:?}"
        );
        assert!(
            read(&data, "tablestore-format")
                .starts_with(&format!("tablestore data folder, store format {format}\n")),
            "{asked:?}"
        );
        // The entities read back the same in every layout.
        let out_dir = work
            .path()
            .join(format!("out-{}", asked.unwrap_or("default")));
        export_folder(&data, &out_dir);
        let exported = out_dir.join(DEV_ACCOUNT).join("Orders.jsonl");
        assert_eq!(without_timestamps(&exported), expected, "{asked:?}");
    }

    // A second import into the zstd folder asking for lz4: the folder stays zstd, and says so.
    let zstd = work.path().join("data-zstd");
    let out = run(&[
        "import",
        "--location",
        zstd.to_str().unwrap(),
        "--compression",
        "lz4",
        "--mode",
        "replace",
        "-q",
        fixture.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("was created with compression zstd and keeps it"),
        "{stderr}"
    );
    assert!(read(&zstd, "conf").contains("use_compression: true"));
    // A folder a server holds is refused, without the note.
    let server = ChildServer::start(&zstd, &[]);
    let e = fails(&[
        "import",
        "--location",
        zstd.to_str().unwrap(),
        "--compression",
        "lz4",
        fixture.to_str().unwrap(),
    ]);
    assert!(
        e.contains("in use by a running server") && !e.contains("note:"),
        "{e}"
    );
    drop(server);

    let e = fails(&[
        "import",
        "--connection-string",
        "UseDevelopmentStorage=true",
        "--compression",
        "zstd",
        fixture.to_str().unwrap(),
    ]);
    assert!(
        e.starts_with("tablestore import: --compression applies to a data folder (--location)"),
        "{e}"
    );
}

#[test]
fn a_data_folder_in_use_is_refused_and_bad_input_is_one_sentence() {
    let work = tempfile::tempdir().unwrap();
    let data = work.path().join("data");
    let server = ChildServer::start(&data, &[]);
    let e = fails(&[
        "export",
        "--location",
        data.to_str().unwrap(),
        "--out",
        work.path().join("o").to_str().unwrap(),
    ]);
    assert!(e.contains("in use by a running server"), "{e}");
    drop(server);

    let bad = work.path().join("Bad.jsonl");
    std::fs::write(
        &bad,
        "{\"PartitionKey\":\"a\",\"RowKey\":\"1\"}\n{\"PartitionKey\":\"a\",\"RowKey\":\"2\",\"N@odata.type\":\"Edm.Int64\",\"N\":\"x\"}\n",
    )
    .unwrap();
    let other = work.path().join("other");
    let e = fails(&[
        "import",
        "--location",
        other.to_str().unwrap(),
        "-q",
        bad.to_str().unwrap(),
    ]);
    assert!(
        e.starts_with("tablestore import: ") && e.contains("Bad.jsonl line 2"),
        "{e}"
    );
    let e = fails(&[
        "export",
        "--location",
        work.path().join("nothing").to_str().unwrap(),
        "--out",
        "x",
    ]);
    assert!(e.contains("holds no tablestore data"), "{e}");
}

#[test]
fn azurite_database_imports_with_types_and_access_policies() {
    let work = tempfile::tempdir().unwrap();
    let data = work.path().join("data");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/azurite");
    let out = ok(&[
        "import",
        "--from-azurite",
        fixture.to_str().unwrap(),
        "--location",
        data.to_str().unwrap(),
        "-q",
    ]);
    assert!(out.contains("imported 8 entities in 2 tables"), "{out}");
    let exported = work.path().join("out");
    export_folder(&data, &exported);
    let typed = std::fs::read_to_string(exported.join(DEV_ACCOUNT).join("Typed.jsonl")).unwrap();
    for expected in [
        r#""Big@odata.type":"Edm.Int64","Big":"9007199254740993""#,
        r#""Bytes@odata.type":"Edm.Binary","Bytes":"AAH+/w==""#,
        r#""Dbl":3.25"#,
        r#""Whole":5.0"#,
        r#""Id@odata.type":"Edm.Guid","Id":"12345678-1234-5678-9abc-def012345678""#,
        r#""When@odata.type":"Edm.DateTime","When":"2024-02-29T12:34:56.123456Z""#,
        r#""Neg":-2147483648"#,
        r#""Str":"héllo 'quoted' %~""#,
        r#""PartitionKey":"p1","RowKey":"""#,
        r#""N@odata.type":"Edm.Int64","N":"-9223372036854775808""#,
    ] {
        assert!(typed.contains(expected), "{expected} missing from {typed}");
    }
    let manifest =
        std::fs::read_to_string(exported.join(DEV_ACCOUNT).join("manifest.json")).unwrap();
    assert!(
        manifest.contains("<Id>readers</Id>") && manifest.contains("<Permission>r</Permission>"),
        "{manifest}"
    );
}

#[test]
fn seed_twice_does_not_duplicate_or_overwrite() {
    let work = tempfile::tempdir().unwrap();
    let seed = work.path().join("seed");
    std::fs::create_dir(&seed).unwrap();
    write_fixture(&seed, "Customers", 250);
    let data = work.path().join("data");
    let seed_arg = seed.to_str().unwrap();

    let server = ChildServer::start(&data, &["--seed", seed_arg]);
    let said = format!("{}{}", server.start_up, server.log_so_far());
    assert!(
        said.contains(&format!("Seed: 250 entities in 1 table from {seed_arg}\n")),
        "{said}"
    );
    let cs = connection_string(&server);
    let count = |cs: &str| {
        let path = work.path().join("count.jsonl");
        ok(&[
            "export",
            "--connection-string",
            cs,
            "-q",
            "--table",
            "Customers",
            "--out",
            path.to_str().unwrap(),
        ]);
        std::fs::read_to_string(&path).unwrap()
    };
    assert_eq!(count(&cs).lines().count(), 250);
    // The application changes a seeded entity.
    let change = work.path().join("Customers.jsonl");
    std::fs::write(
        &change,
        "{\"PartitionKey\":\"p0000\",\"RowKey\":\"r'0000000%~\",\"Changed\":true}\n",
    )
    .unwrap();
    ok(&[
        "import",
        "--connection-string",
        &cs,
        "-q",
        "--mode",
        "replace",
        change.to_str().unwrap(),
    ]);
    assert_eq!(server.terminate().code(), Some(0));

    let server = ChildServer::start(&data, &["--seed", seed_arg]);
    assert!(server.log_so_far().contains("already loaded"));
    let text = count(&connection_string(&server));
    assert_eq!(text.lines().count(), 250, "no duplicates");
    assert!(text.contains("\"Changed\":true"), "the change was kept");
    drop(server);

    // A changed seed adds what is new and leaves what exists.
    write_fixture(&seed, "Customers", 260);
    let server = ChildServer::start(&data, &["--seed", seed_arg]);
    let text = count(&connection_string(&server));
    assert_eq!(text.lines().count(), 260);
    assert!(text.contains("\"Changed\":true"));
    drop(server);

    // A missing seed is an error; --seed-if-present ignores it.
    let missing = work.path().join("missing");
    let Err(failed) = ChildServer::try_start(&data, &["--seed", missing.to_str().unwrap()]) else {
        panic!("a missing --seed must stop the start");
    };
    assert!(
        failed.stderr.contains("--seed") && failed.stderr.contains("does not exist"),
        "{failed:?}"
    );
    drop(ChildServer::start(
        &data,
        &["--seed-if-present", missing.to_str().unwrap()],
    ));
}

/// `export --out -` writes one table's lines to standard output (the summary to standard
/// error), in JSON Lines or CSV, and creates no file or folder named `-`.
#[test]
fn export_to_standard_output() {
    let work = tempfile::tempdir().unwrap();
    let seed = work.path().join("seed");
    std::fs::create_dir(&seed).unwrap();
    write_fixture(&seed, "Customers", 120);
    write_fixture(&seed, "Orders", 3);
    let server = ChildServer::start(
        &work.path().join("data"),
        &["--seed", seed.to_str().unwrap()],
    );
    let cs = connection_string(&server);
    let export = |extra: &[&str]| {
        let mut args = vec!["export", "--connection-string", &cs, "--out", "-"];
        args.extend_from_slice(extra);
        Command::new(binary())
            .args(&args)
            .current_dir(work.path())
            .env_remove("AZURITE_ACCOUNTS")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let out = export(&["--table", "Customers"]);
    assert!(out.status.success(), "{out:?}");
    let lines = String::from_utf8(out.stdout).unwrap();
    assert_eq!(lines.lines().count(), 120, "{lines}");
    assert!(lines
        .lines()
        .all(|l| l.starts_with("{\"PartitionKey\":\"p")));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("exported 120 entities in 1 table"),
        "{stderr}"
    );
    assert!(!work.path().join("-").exists(), "a folder named - was made");

    let out = export(&["--table", "Orders", "--format", "csv", "-q"]);
    assert!(out.status.success(), "{out:?}");
    let csv = String::from_utf8(out.stdout).unwrap();
    assert_eq!(csv.lines().count(), 4, "a header and three rows: {csv}");
    assert!(csv.starts_with("PartitionKey,RowKey,"), "{csv}");
    assert!(
        out.stderr.is_empty(),
        "-q: {:?}",
        String::from_utf8_lossy(&out.stderr)
    );

    let out = export(&[]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("takes one table, but 2 are exported: give one --table"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
    assert!(!work.path().join("-").exists());
}

/// Entities streamed through import and export in bounded memory: a million (about two
/// minutes for a debug build on two cores).
const STREAMED: u32 = 1_000_000;

#[test]
fn a_million_entities_stream_in_bounded_memory() {
    let n = STREAMED;
    let work = tempfile::tempdir().unwrap();
    let file = work.path().join("Million.jsonl");
    {
        use std::io::Write as _;
        let mut out = std::io::BufWriter::new(std::fs::File::create(&file).unwrap());
        for i in 0..n {
            writeln!(
                out,
                r#"{{"PartitionKey":"p{:03}","RowKey":"{:07}","V":{i}}}"#,
                i / 10_000,
                i
            )
            .unwrap();
        }
    }
    let data = work.path().join("data");
    let peak = |summary: &str| -> u64 {
        summary
            .split("peak memory ")
            .nth(1)
            .and_then(|s| s.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no peak memory in {summary}"))
    };
    let summary = ok(&[
        "import",
        "--location",
        data.to_str().unwrap(),
        "-q",
        file.to_str().unwrap(),
    ]);
    assert!(
        summary.contains(&format!("imported {n} entities")),
        "{summary}"
    );
    // The store's page cache (64 MiB), sled's write buffers and ours; never the data set
    // (a million entities are ~50 MiB of JSON and several times that as entities in memory).
    assert!(peak(&summary) < 300, "{summary}");
    let out = work.path().join("out");
    let summary = export_folder(&data, &out);
    assert!(
        summary.contains(&format!("exported {n} entities")),
        "{summary}"
    );
    assert!(peak(&summary) < 300, "{summary}");
}

/// What an interrupted import of `fixture` left in `held` (both without timestamps): the
/// first `committed` entities of the file (what the import recorded as committed) are all
/// there and intact; whatever else is there is an entity of the file, whole; and each batch
/// the import sends is there entirely or not at all. The fixture's partitions of 150 entities
/// go out as batches of 100 and 50 (docs/data.md: up to 100 consecutive entities of one
/// partition). Returns how many entities are there.
fn assert_nothing_torn(held: &[String], fixture: &[String], committed: usize) -> usize {
    let index: std::collections::HashMap<&str, usize> = fixture
        .iter()
        .enumerate()
        .map(|(i, line)| (line.as_str(), i))
        .collect();
    let mut present = vec![false; fixture.len()];
    for line in held {
        let i = *index
            .get(line.as_str())
            .unwrap_or_else(|| panic!("not an entity of the fixture, or changed: {line}"));
        assert!(!present[i], "entity {i} is there twice");
        present[i] = true;
    }
    if let Some(missing) = (0..committed).find(|&i| !present[i]) {
        panic!("entity {missing} was recorded as committed ({committed}) but is not there");
    }
    let batch_of = |i: usize| (i / 150, i % 150 / 100);
    let mut i = 0;
    while i < fixture.len() {
        let first = i;
        while i < fixture.len() && batch_of(i) == batch_of(first) {
            i += 1;
        }
        let there = present[first..i].iter().filter(|p| **p).count();
        assert!(
            there == 0 || there == i - first,
            "a torn batch: {there} of entities {first}..{i} are there"
        );
    }
    held.len()
}

/// An import of a fixture of `n` entities into table `Big`, to be interrupted with `kill -9`.
struct KilledImport {
    work: tempfile::TempDir,
    fixture: std::path::PathBuf,
    progress: std::path::PathBuf,
}

impl KilledImport {
    const KEY: &str = "devstoreaccount1/Big";

    fn new(n: usize) -> KilledImport {
        let work = tempfile::tempdir().unwrap();
        let fixture = write_fixture(work.path(), "Big", n);
        let progress = work.path().join("Big.jsonl.import-progress.json");
        KilledImport {
            work,
            fixture,
            progress,
        }
    }

    fn data(&self) -> std::path::PathBuf {
        self.work.path().join("data")
    }

    /// Starts `tablestore import` with `endpoint` (its endpoint options) and returns once it
    /// is past its first checkpoint and has written on for a moment: batches committed after
    /// the checkpoint, some of them on disk.
    fn start(&self, endpoint: &[&str]) -> std::process::Child {
        let mut importer = Command::new(binary())
            .arg("import")
            .args(endpoint)
            .arg("-q")
            .arg(&self.fixture)
            .env_remove("AZURITE_ACCOUNTS")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(120);
        while self.committed().is_none_or(|n| n == 0) {
            assert!(
                Instant::now() < deadline,
                "no import checkpoint within 120 s"
            );
            assert!(
                importer.try_wait().unwrap().is_none(),
                "the import ended before its first checkpoint"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        // More than sled's flush interval (500 ms), so writes after the checkpoint reach the disk.
        std::thread::sleep(Duration::from_millis(700));
        assert!(
            importer.try_wait().unwrap().is_none(),
            "the import ended before the kill: use a larger fixture"
        );
        importer
    }

    /// The entities the import recorded as committed, once it has written a checkpoint.
    fn committed(&self) -> Option<usize> {
        let text = std::fs::read_to_string(&self.progress).ok()?;
        let state: serde_json::Value = serde_json::from_str(&text).ok()?;
        state["committed"][Self::KEY].as_u64().map(|n| n as usize)
    }

    /// Table `Big` as `export` with `endpoint` reads it, without timestamps.
    fn export(&self, endpoint: &[&str], name: &str) -> Vec<String> {
        let out = self.work.path().join(name);
        let out = out.to_str().unwrap();
        ok(&[&["export"], endpoint, &["-q", "--out", out]].concat());
        without_timestamps(Path::new(out))
    }

    /// After the kill, with `endpoint` serving the data: nothing is torn (see
    /// [`assert_nothing_torn`]); running the import again as it was is refused with what to
    /// do; `--resume` finishes it, every entity of the file there once.
    fn check_and_resume(&self, endpoint: &[&str]) {
        let committed = self.committed().unwrap();
        let expected = without_timestamps(&self.fixture);
        let held =
            assert_nothing_torn(&self.export(endpoint, "killed.jsonl"), &expected, committed);
        assert!(held < expected.len(), "{held} entities after the kill");

        let fixture = self.fixture.to_str().unwrap();
        let e = fails(&[&["import"], endpoint, &["-q", fixture]].concat());
        assert!(e.contains("--resume"), "{e}");
        let summary = ok(&[&["import"], endpoint, &["-q", "--resume", fixture]].concat());
        assert!(summary.starts_with("imported "), "{summary}");
        assert!(
            !self.progress.exists(),
            "the progress file is removed when done"
        );
        assert!(
            self.export(endpoint, "resumed.jsonl") == expected,
            "after --resume the table holds the file's entities, each once"
        );
    }
}

/// The import commits itself, into a data folder: kill -9 of the importer.
#[test]
fn import_into_a_data_folder_resumes_after_kill_9_of_the_importer() {
    // Enough that the import outlives its first checkpoint (2 s) by far in either profile.
    let run = KilledImport::new(if cfg!(debug_assertions) {
        150_000
    } else {
        600_000
    });
    let data = run.data();
    let endpoint = ["--location", data.to_str().unwrap()];
    let mut importer = run.start(&endpoint);
    importer.kill().unwrap();
    importer.wait().unwrap();
    run.check_and_resume(&endpoint);
}

/// The server commits, for an import over HTTP: kill -9 of the server. The importer stops
/// with one sentence; the restarted server holds every acknowledged batch, whole.
#[test]
fn import_into_a_server_resumes_after_kill_9_of_the_server() {
    let run = KilledImport::new(if cfg!(debug_assertions) {
        60_000
    } else {
        300_000
    });
    let server = ChildServer::start(&run.data(), &[]);
    let importer = run.start(&["--connection-string", &connection_string(&server)]);
    server.kill9();
    let out = importer.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.starts_with("tablestore import: ") && stderr.trim_end().lines().count() == 1,
        "one sentence: {stderr}"
    );

    let server = ChildServer::start(&run.data(), &[]);
    run.check_and_resume(&["--connection-string", &connection_string(&server)]);
}

/// `--flavor cosmos` export and import: Cosmos table names (case-sensitive, any character but
/// `/ \ # ?`) round-trip through a data folder, an export folder (the manifest keeps each name,
/// file names are percent-encoded) and another data folder. Without it, the commands see the
/// folder as the storage flavour does.
#[test]
fn cosmos_table_names_round_trip_through_export_and_import() {
    let work = tempfile::tempdir().unwrap();
    let first = work.path().join("first");
    // `import --flavor cosmos --location DATA -q [--table T] PATH`.
    let cosmos_import = |data: &Path, table: Option<&str>, path: &Path| {
        let mut args = vec!["import", "--flavor", "cosmos", "--location"];
        args.extend([data.to_str().unwrap(), "-q"]);
        args.extend(table.iter().flat_map(|t| ["--table", t]));
        args.push(path.to_str().unwrap());
        ok(&args)
    };
    let names = ["Orders", "orders", "my table", "Ünï 名前.x-y"];
    for (i, name) in names.iter().enumerate() {
        let file = write_fixture(work.path(), &format!("source{i}"), 10 + i);
        let out = cosmos_import(&first, Some(name), &file);
        assert!(
            out.contains(&format!("imported {} entities", 10 + i)),
            "{out}"
        );
    }
    let cosmos_export = |data: &Path, out: &Path| {
        ok(&[
            "export",
            "--flavor",
            "cosmos",
            "--location",
            data.to_str().unwrap(),
            "-q",
            "--out",
            out.to_str().unwrap(),
        ])
    };
    let out = work.path().join("out");
    cosmos_export(&first, &out);
    let account = out.join("localhost");
    let manifest = std::fs::read_to_string(account.join("manifest.json")).unwrap();
    for name in names {
        assert!(
            manifest.contains(&serde_json::to_string(name).unwrap()),
            "{manifest}"
        );
    }
    assert!(account.join("my%20table.jsonl").exists());
    let second = work.path().join("second");
    let imported = cosmos_import(&second, None, &out);
    assert!(imported.contains("imported 46 entities"), "{imported}");
    let again = work.path().join("again");
    cosmos_export(&second, &again);
    for (i, name) in names.iter().enumerate() {
        let stem: String =
            percent_encoding::utf8_percent_encode(name, percent_encoding::NON_ALPHANUMERIC)
                .to_string();
        let file = format!("{stem}.jsonl");
        let before = without_timestamps(&account.join(&file));
        assert_eq!(before.len(), 10 + i, "{name}");
        assert_eq!(
            before,
            without_timestamps(&again.join("localhost").join(&file)),
            "{name}"
        );
    }
    // The storage flavour's view of the same folder: no `Orders` (a Cosmos name with
    // capitals), `orders` and the names without capitals as they are.
    let storage_out = work.path().join("storage");
    ok(&[
        "export",
        "--location",
        first.to_str().unwrap(),
        "--account",
        "localhost",
        "-q",
        "--out",
        storage_out.to_str().unwrap(),
    ]);
    let manifest = std::fs::read_to_string(storage_out.join("localhost/manifest.json")).unwrap();
    assert!(!manifest.contains("\"Orders\""), "{manifest}");
    assert!(manifest.contains("\"orders\""), "{manifest}");
    // Entities are held to Cosmos's limits: a 1.5 MB item goes in; Storage's 1 MiB refuses it.
    let big = work.path().join("Big.jsonl");
    let line = format!(
        r#"{{"PartitionKey":"p","RowKey":"r","Text":"{}"}}"#,
        "x".repeat(1_500_000)
    );
    std::fs::write(&big, line).unwrap();
    let out = cosmos_import(&first, None, &big);
    assert!(out.contains("imported 1 entities"), "{out}");
    let err = fails(&[
        "import",
        "--location",
        work.path().join("storage-data").to_str().unwrap(),
        big.to_str().unwrap(),
    ]);
    assert!(err.contains("larger than the maximum size"), "{err}");
    // A name Cosmos refuses is one sentence.
    let file = write_fixture(work.path(), "bad", 1);
    let err = fails(&[
        "import",
        "--flavor",
        "cosmos",
        "--location",
        first.to_str().unwrap(),
        "--table",
        "a#b",
        file.to_str().unwrap(),
    ]);
    assert!(err.contains("is not a valid table name"), "{err}");
}

/// The Cosmos DB emulator's connection string for a `--flavor cosmos` server.
fn cosmos_connection_string(server: &ChildServer) -> String {
    format!(
        "DefaultEndpointsProtocol=http;AccountName=localhost;AccountKey={};TableEndpoint={}/;",
        tablestore::auth::accounts::COSMOS_EMULATOR_ACCOUNT_KEY,
        server.endpoint()
    )
}

/// Asserts `stderr` is one sentence without Rust error chains or escaped line ends.
fn assert_one_plain_sentence(stderr: &str) {
    assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr}");
    for chain in [
        "client error",
        "tcp connect error",
        "error sending request",
        "os error",
        "\\n",
        "RequestID",
        "RequestId",
        "ActivityId",
    ] {
        assert!(!stderr.contains(chain), "{chain:?} in: {stderr}");
    }
}

/// Issue 43, items 1 and 2: `export` from a `--flavor cosmos` server with the emulator's
/// connection string works (Cosmos has no stored access policies: Get Table ACL is 501, so
/// the export has none, says so, and is whole: a manifest, no progress file, no `--resume`);
/// `--table Orders` exports `Orders` and not `orders` (two tables in Cosmos), and a name that
/// matches no table, in any case, is an error rather than "exported 0 entities".
#[test]
fn export_from_a_cosmos_server_is_whole_and_keeps_table_case() {
    let work = tempfile::tempdir().unwrap();
    let server = ChildServer::start(&work.path().join("data"), &["--flavor", "cosmos"]);
    let cs = cosmos_connection_string(&server);
    let upper = work.path().join("Orders.jsonl");
    std::fs::write(
        &upper,
        "{\"PartitionKey\":\"p\",\"RowKey\":\"1\",\"N\":1}\n{\"PartitionKey\":\"p\",\"RowKey\":\"2\",\"N\":2}\n",
    )
    .unwrap();
    let lower = work.path().join("orders.jsonl");
    std::fs::write(
        &lower,
        "{\"PartitionKey\":\"p\",\"RowKey\":\"9\",\"N\":9}\n",
    )
    .unwrap();
    for file in [&upper, &lower] {
        ok(&[
            "import",
            "--connection-string",
            &cs,
            "-q",
            file.to_str().unwrap(),
        ]);
    }

    // Every table, into a folder.
    let out_dir = work.path().join("backup");
    let out = run(&[
        "export",
        "--connection-string",
        &cs,
        "-q",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("exported 3 entities in 2 tables"),
        "{stdout}"
    );
    assert!(
        stderr.contains("tablestore export: note: ")
            && stderr.contains("has no stored access policies")
            && stderr.contains("501 NotImplemented"),
        "{stderr}"
    );
    assert_eq!(stderr.trim_end().lines().count(), 1, "one note: {stderr}");
    let account_dir = out_dir.join("localhost");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(account_dir.join("manifest.json")).unwrap()).unwrap();
    let mut tables: Vec<(String, u64)> = manifest["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            assert!(t.get("acl").is_none(), "{t}");
            (
                t["name"].as_str().unwrap().to_string(),
                t["entities"].as_u64().unwrap(),
            )
        })
        .collect();
    tables.sort();
    assert_eq!(
        tables,
        [("Orders".to_string(), 2), ("orders".to_string(), 1)]
    );
    assert!(!account_dir.join(".export-progress.json").exists());

    // One table by name: exactly that one.
    let lines = ok(&[
        "export",
        "--connection-string",
        &cs,
        "--table",
        "Orders",
        "-q",
        "--out",
        "-",
    ]);
    assert_eq!(lines.lines().count(), 2, "{lines}");
    assert!(lines.contains("\"RowKey\":\"1\"") && !lines.contains("\"RowKey\":\"9\""));
    let lines = ok(&[
        "export",
        "--connection-string",
        &cs,
        "--table",
        "orders",
        "-q",
        "--out",
        "-",
    ]);
    assert!(
        lines.contains("\"RowKey\":\"9\"") && lines.lines().count() == 1,
        "{lines}"
    );

    // No such table, in any case: an error naming the ones that differ only in case.
    let single = work.path().join("one.jsonl");
    for target in ["-", single.to_str().unwrap()] {
        let e = fails(&[
            "export",
            "--connection-string",
            &cs,
            "--table",
            "ORDERS",
            "-q",
            "--out",
            target,
        ]);
        assert!(
            e.starts_with("tablestore export: table ORDERS does not exist in account localhost")
                && e.contains("case-sensitive")
                && e.contains("Orders")
                && e.contains("orders"),
            "{e}"
        );
        assert_one_plain_sentence(&e);
    }
    assert!(!single.exists(), "no file for a table that does not exist");
    let e = fails(&[
        "export",
        "--connection-string",
        &cs,
        "--table",
        "Nope",
        "-q",
        "--out",
        "-",
    ]);
    assert!(
        e.contains("table Nope does not exist") && !e.contains("case-sensitive"),
        "{e}"
    );
}

/// Issue 43, item 7: an endpoint that cannot be reached, a refused signature and a surface the
/// service lacks are each one sentence naming the endpoint, the service's code and message (no
/// Rust error chain, no escaped `\n`, no request-id lines) and what to check.
#[test]
fn transfer_failures_are_one_sentence_naming_the_endpoint() {
    let work = tempfile::tempdir().unwrap();
    // Nothing listens: a port that was free a moment ago.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let closed = format!(
        "DefaultEndpointsProtocol=http;AccountName={DEV_ACCOUNT};AccountKey={DEV_ACCOUNT_KEY};TableEndpoint=http://127.0.0.1:{port}/{DEV_ACCOUNT};"
    );
    let e = fails(&["export", "--connection-string", &closed, "-q", "--out", "-"]);
    assert!(
        e.starts_with(&format!(
            "tablestore export: cannot reach http://127.0.0.1:{port}/{DEV_ACCOUNT}: the connection was refused"
        )) && e.contains("TableEndpoint"),
        "{e}"
    );
    assert_one_plain_sentence(&e);
    let fixture = write_fixture(work.path(), "People", 3);
    let e = fails(&[
        "import",
        "--connection-string",
        &closed,
        "-q",
        fixture.to_str().unwrap(),
    ]);
    assert!(e.contains("cannot reach") && e.contains("refused"), "{e}");
    assert_one_plain_sentence(&e);

    // A wrong key: the service's 403, cleanly, and what to check.
    let server = ChildServer::start(&work.path().join("data"), &[]);
    let wrong_key = format!(
        "DefaultEndpointsProtocol=http;AccountName={DEV_ACCOUNT};AccountKey=a2V5a2V5a2V5a2V5;TableEndpoint={}/{DEV_ACCOUNT};",
        server.endpoint()
    );
    let e = fails(&[
        "export",
        "--connection-string",
        &wrong_key,
        "-q",
        "--out",
        "-",
    ]);
    assert!(
        e.contains("listing tables at ")
            && e.contains(
                "failed: 403 AuthenticationFailed: Server failed to authenticate the request"
            )
            && e.contains("check the connection string's AccountName and AccountKey"),
        "{e}"
    );
    assert_one_plain_sentence(&e);

    // A surface the service lacks (Cosmos has no stored access policies): its 501, cleanly.
    let cosmos = ChildServer::start(&work.path().join("cosmos"), &["--flavor", "cosmos"]);
    let export = work.path().join("with-policies");
    std::fs::create_dir_all(&export).unwrap();
    std::fs::write(
        export.join("T1.jsonl"),
        "{\"PartitionKey\":\"p\",\"RowKey\":\"1\"}\n",
    )
    .unwrap();
    std::fs::write(
        export.join("manifest.json"),
        r#"{"account":"localhost","format":"jsonl","tables":[{"name":"T1","file":"T1.jsonl","entities":1,"acl":"<?xml version=\"1.0\" encoding=\"utf-8\"?><SignedIdentifiers><SignedIdentifier><Id>p1</Id><AccessPolicy><Permission>r</Permission></AccessPolicy></SignedIdentifier></SignedIdentifiers>"}]}"#,
    )
    .unwrap();
    let e = fails(&[
        "import",
        "--connection-string",
        &cosmos_connection_string(&cosmos),
        "-q",
        export.to_str().unwrap(),
    ]);
    assert!(
        e.contains("setting the access policies of T1")
            && e.contains("501 NotImplemented: The requested operation is not supported")
            && e.contains("the service does not offer this operation"),
        "{e}"
    );
    assert_one_plain_sentence(&e);
}

/// Issue 43, item 7: an import that stops on a bad line before its first batch leaves no
/// table behind (it created an empty one), into a server and into a data folder; the
/// sentence says nothing was imported.
#[test]
fn a_bad_line_before_the_first_batch_leaves_no_table() {
    let work = tempfile::tempdir().unwrap();
    let bad = work.path().join("Broken.jsonl");
    std::fs::write(
        &bad,
        "{\"PartitionKey\":\"p\",\"RowKey\":\"1\"}\n{\"PartitionKey\":\"p\",\"RowKey\":\n",
    )
    .unwrap();
    let server = ChildServer::start(&work.path().join("served"), &[]);
    let cs = connection_string(&server);
    let e = fails(&[
        "import",
        "--connection-string",
        &cs,
        "-q",
        bad.to_str().unwrap(),
    ]);
    assert!(
        e.contains("line 2") && e.contains("nothing was imported into Broken"),
        "{e}"
    );
    let listed = ok(&[
        "export",
        "--connection-string",
        &cs,
        "-q",
        "--out",
        work.path().join("all").to_str().unwrap(),
    ]);
    assert!(
        listed.contains("exported 0 entities in 0 tables"),
        "{listed}"
    );

    let data = work.path().join("folder");
    let e = fails(&[
        "import",
        "--location",
        data.to_str().unwrap(),
        "-q",
        bad.to_str().unwrap(),
    ]);
    assert!(e.contains("nothing was imported"), "{e}");
    let e = fails(&[
        "export",
        "--location",
        data.to_str().unwrap(),
        "--table",
        "Broken",
        "-q",
        "--out",
        "-",
    ]);
    assert!(e.contains("does not exist"), "{e}");

    // An empty file still makes its (empty) table: an export of an empty table round-trips.
    let empty = work.path().join("Empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    ok(&[
        "import",
        "--connection-string",
        &cs,
        "-q",
        empty.to_str().unwrap(),
    ]);
    let out = ok(&[
        "export",
        "--connection-string",
        &cs,
        "--table",
        "Empty",
        "-q",
        "--out",
        "-",
    ]);
    assert_eq!(out, "");
}
