//! The layering inside the crates, checked by reading the source rather than kept by care.
//!
//! The workspace's crates are the coarse layers (docs/architecture.md): a crate depends only on
//! the crates below it, so an import that points up between crates does not compile. This test
//! keeps what crate boundaries cannot:
//!
//! - each crate names the crates below it only in its `lib.rs`, under the names they have in
//!   every crate (`use tablestore_store as store;` makes `crate::store`), and only those its
//!   layer may use ([`NAMES`]): the store sees the model but not the wire protocol, the data
//!   tools see the configuration and the query executor but not the front end;
//! - the arrows between the modules that share a crate ([`ALLOWED`]):
//!
//! ```text
//! crates/protocol  model     -> nothing
//!                  protocol  -> model
//! crates/server    query     -> model, protocol, store
//!                  batch     -> model, store
//!                  exec      -> model, protocol, store, query, batch, auth
//!                  config    -> model, protocol, store, auth
//!                  insight   -> model, protocol, store, query, batch, exec
//!                  realism   -> model, protocol
//!                  console   -> nothing
//!                  server    -> everything in and below its crate
//! crates/tools     data      -> model, protocol, store, auth, query, config
//!                  admin     -> auth, config, data
//! ```
//!
//! The executor (`exec`) runs typed operations and returns typed outcomes; `protocol` never
//! imports it (bytes to typed values and back stay apart from running them), and only the
//! server and the layers beside the request path (insight) read its outcomes.
//!
//! Below the top level: the store's public rooms are there for its tests and benches, not
//! for the layers above. Only the store reads its byte layout (`store::encoding`); `query`,
//! `batch`, `exec`, `data` and `server` use the contract's key-range and row types. The
//! executor, the server and insight see the store through its one seam, the async `Store`
//! contract (and `store::open`, which stacks the engine and the RAM tier): never an engine
//! (`store::kv`, `store::postgres`) or the RAM tier (`store::tier`). Inside `server`, the
//! decode and encode steps never import the
//! dispatcher or the admission of requests (the dispatcher imports them, so that would be a
//! circle). The allowed graph itself must be free of cycles. `a_wrong_import_is_caught`
//! shows the check failing.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each crate's source folder (under the repository root) → the crates below it its `lib.rs`
/// names, and the names it gives them (`crate::<name>` in the crate's files).
const NAMES: &[(&str, &[(&str, &str)])] = &[
    ("crates/protocol/src", &[]),
    ("crates/auth/src", &[]),
    ("crates/store/src", &[("tablestore_protocol", "model")]),
    (
        "crates/server/src",
        &[
            ("tablestore_protocol", "model"),
            ("tablestore_protocol", "protocol"),
            ("tablestore_auth", "auth"),
            ("tablestore_store", "store"),
        ],
    ),
    (
        "crates/tools/src",
        &[
            ("tablestore_protocol", "model"),
            ("tablestore_protocol", "protocol"),
            ("tablestore_auth", "auth"),
            ("tablestore_store", "store"),
            ("tablestore_server", "config"),
            ("tablestore_server", "query"),
        ],
    ),
    ("crates/bench/src", &[]),
];

/// The crates whose modules [`ALLOWED`] places.
const LAYERED: &[&str] = &[
    "crates/protocol/src",
    "crates/server/src",
    "crates/tools/src",
];

/// Module → the modules (of its crate, or the names of the crates below) it may import.
const ALLOWED: &[(&str, &[&str])] = &[
    ("model", &[]),
    ("protocol", &["model"]),
    ("query", &["model", "protocol", "store"]),
    ("batch", &["model", "store"]),
    (
        "exec",
        &["model", "protocol", "store", "query", "batch", "auth"],
    ),
    ("config", &["model", "protocol", "store", "auth"]),
    (
        "insight",
        &["model", "protocol", "store", "query", "batch", "exec"],
    ),
    ("realism", &["model", "protocol"]),
    ("console", &[]),
    (
        "server",
        &[
            "model", "protocol", "store", "auth", "query", "batch", "exec", "config", "insight",
            "realism", "console",
        ],
    ),
    (
        "data",
        &["model", "protocol", "store", "auth", "query", "config"],
    ),
    ("admin", &["auth", "config", "data"]),
    // The crates below, as every crate names them: their own crates keep their arrows.
    ("auth", &[]),
    ("store", &["model"]),
];

/// (importing module prefix, imported module prefix) pairs that are never allowed, although
/// the top-level arrow is: the store's byte layout is private to the store (its contract has
/// the key-range and row types), the server and insight reach the store only through its
/// contract (what lies under it is the store's: engines, the RAM tier), and the decode and
/// encode steps never import the route table or admission.
const FORBIDDEN_INSIDE: &[(&str, &str)] = &[
    ("query", "store::encoding"),
    ("batch", "store::encoding"),
    ("exec", "store::encoding"),
    ("exec", "store::kv"),
    ("exec", "store::postgres"),
    ("exec", "store::tier"),
    ("data", "store::encoding"),
    ("server", "store::encoding"),
    ("server", "store::kv"),
    ("server", "store::postgres"),
    ("server", "store::tier"),
    ("insight", "store::kv"),
    ("insight", "store::postgres"),
    ("insight", "store::tier"),
    ("server::decode", "server::dispatch"),
    ("server::decode", "server::intake"),
    ("server::encode", "server::dispatch"),
    ("server::encode", "server::intake"),
];

/// A module path such as `server::encode`, as segments.
type ModPath = Vec<String>;

/// The module path of a file under `src/` (`src/a/b.rs` and `src/a/b/mod.rs` → `a::b`).
fn module_of(relative: &Path) -> ModPath {
    let mut parts: Vec<String> = relative
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// Removes `//` comments (doc comments included) and `/* */` blocks, so that intra-doc links
/// and prose never count as imports.
fn strip_comments(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    let mut in_block = 0usize;
    for line in source.lines() {
        let mut rest = line;
        let mut kept = String::new();
        loop {
            if in_block > 0 {
                match rest.find("*/") {
                    Some(i) => {
                        in_block -= 1;
                        rest = &rest[i + 2..];
                    }
                    None => break,
                }
            } else {
                let line_comment = rest.find("//");
                let block = rest.find("/*");
                match (line_comment, block) {
                    (Some(l), Some(b)) if b < l => {
                        kept.push_str(&rest[..b]);
                        in_block += 1;
                        rest = &rest[b + 2..];
                    }
                    (Some(l), _) => {
                        kept.push_str(&rest[..l]);
                        break;
                    }
                    (None, Some(b)) => {
                        kept.push_str(&rest[..b]);
                        in_block += 1;
                        rest = &rest[b + 2..];
                    }
                    (None, None) => {
                        kept.push_str(rest);
                        break;
                    }
                }
            }
        }
        out.push_str(&kept);
        out.push('\n');
    }
    out
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Reads a `::`-separated path of identifiers at the start of `text` (stops at `{`).
fn read_path(text: &str) -> Vec<String> {
    let mut segments = Vec::new();
    let mut rest = text;
    loop {
        let end = rest.find(|c: char| !is_ident_char(c)).unwrap_or(rest.len());
        if end == 0 {
            break;
        }
        segments.push(rest[..end].to_string());
        rest = &rest[end..];
        match rest.strip_prefix("::") {
            Some(r) if r.starts_with(|c: char| is_ident_char(c)) => rest = r,
            _ => break,
        }
    }
    segments
}

/// The items of a `{ … }` group at the start of `text` (top level of the group only; a
/// nested group contributes its own prefix).
fn read_group(text: &str) -> Vec<Vec<String>> {
    let Some(inner) = text.strip_prefix('{') else {
        return Vec::new();
    };
    let mut depth = 0;
    let mut items = Vec::new();
    let mut start = 0;
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                items.push(read_path(inner[start..i].trim()));
                break;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(read_path(inner[start..i].trim()));
                start = i + 1;
            }
            _ => {}
        }
    }
    items.into_iter().filter(|p| !p.is_empty()).collect()
}

/// Every module path `file_module` refers to through `crate::` or `super::` (absolute,
/// without the `crate` segment).
fn imports(file_module: &ModPath, source: &str) -> BTreeSet<ModPath> {
    let code = strip_comments(source);
    let mut found = BTreeSet::new();
    // `super` of module `a::b` is `a`, whether it lives in `a/b.rs` or `a/b/mod.rs`.
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < code.len() {
        let at_boundary = i == 0 || !is_ident_char(bytes[i - 1] as char) && bytes[i - 1] != b'$';
        let rest = &code[i..];
        if at_boundary && (rest.starts_with("crate::") || rest.starts_with("super::")) {
            let (mut base, mut after): (ModPath, &str) =
                if let Some(r) = rest.strip_prefix("crate::") {
                    (Vec::new(), r)
                } else {
                    let mut base = file_module.clone();
                    let mut r = rest;
                    while let Some(next) = r.strip_prefix("super::") {
                        base.pop();
                        r = next;
                    }
                    (base, r)
                };
            if after.starts_with('{') {
                for item in read_group(after) {
                    let mut full = base.clone();
                    full.extend(item);
                    found.insert(full);
                }
            } else {
                let path = read_path(after);
                let consumed =
                    path.iter().map(String::len).sum::<usize>() + 2 * path.len().saturating_sub(1);
                after = &after[consumed..];
                base.extend(path);
                if let Some(group) = after.strip_prefix("::") {
                    for item in read_group(group) {
                        let mut full = base.clone();
                        full.extend(item);
                        found.insert(full);
                    }
                }
                found.insert(base);
            }
            i += 7;
        } else {
            i += rest.chars().next().map_or(1, char::len_utf8);
        }
    }
    found
}

/// One import against the architecture.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Violation {
    file: String,
    from: String,
    to: String,
}

/// Checks files (path under a crate's `src/`, contents) against [`ALLOWED`] and
/// [`FORBIDDEN_INSIDE`].
fn check(files: &[(PathBuf, String)]) -> Vec<Violation> {
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    let mut violations = Vec::new();
    for (path, source) in files {
        let module = module_of(path);
        let Some(top) = module.first() else { continue };
        let Some(may) = allowed.get(top.as_str()) else {
            continue; // lib.rs: not part of the layering
        };
        for target in imports(&module, source) {
            let Some(target_top) = target.first() else {
                continue;
            };
            let joined = target.join("::");
            if target_top != top
                && allowed.contains_key(target_top.as_str())
                && !may.contains(&target_top.as_str())
            {
                violations.push(Violation {
                    file: path.display().to_string(),
                    from: top.clone(),
                    to: target_top.clone(),
                });
            }
            let from_joined = module.join("::");
            for (from, to) in FORBIDDEN_INSIDE {
                let inside =
                    |m: &str, prefix: &str| m == prefix || m.starts_with(&format!("{prefix}::"));
                if inside(&from_joined, from) && inside(&joined, to) {
                    violations.push(Violation {
                        file: path.display().to_string(),
                        from: from.to_string(),
                        to: to.to_string(),
                    });
                }
            }
        }
    }
    violations.sort();
    violations.dedup();
    violations
}

/// A cycle in the allowed graph, if any (depth-first search).
fn find_cycle(graph: &[(&str, &[&str])]) -> Option<Vec<String>> {
    fn visit<'a>(
        node: &'a str,
        graph: &BTreeMap<&'a str, &'a [&'a str]>,
        stack: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) -> Option<Vec<String>> {
        if let Some(at) = stack.iter().position(|n| *n == node) {
            let mut cycle: Vec<String> = stack[at..].iter().map(|s| s.to_string()).collect();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        stack.push(node);
        for next in graph.get(node).copied().unwrap_or(&[]) {
            if let Some(cycle) = visit(next, graph, stack, done) {
                return Some(cycle);
            }
        }
        stack.pop();
        done.insert(node);
        None
    }
    let map: BTreeMap<&str, &[&str]> = graph.iter().copied().collect();
    let mut done = BTreeSet::new();
    graph
        .iter()
        .find_map(|(node, _)| visit(node, &map, &mut Vec::new(), &mut done))
}

fn source_files(dir: &Path, root: &Path, out: &mut Vec<(PathBuf, String)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            source_files(&path, root, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
            let relative = path.strip_prefix(root).expect("under src").to_path_buf();
            out.push((relative, text));
        }
    }
}

fn repository() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn crate_files(src: &str) -> Vec<(PathBuf, String)> {
    let root = repository().join(src);
    let mut files = Vec::new();
    source_files(&root, &root, &mut files);
    files
}

/// The `use tablestore_x …` lines of a `lib.rs`: (crate, name it is given) pairs. `use
/// tablestore_x as name;` and `use tablestore_x::{a, b};` (each module under its own name).
fn names_of(lib: &str) -> BTreeSet<(String, String)> {
    let mut names = BTreeSet::new();
    for line in strip_comments(lib).lines() {
        let line = line.trim();
        let Some(rest) = line
            .strip_prefix("use ")
            .or_else(|| line.strip_prefix("pub use "))
            .or_else(|| line.strip_prefix("pub(crate) use "))
        else {
            continue;
        };
        if !rest.starts_with("tablestore_") {
            continue;
        }
        let rest = rest.trim_end_matches(';');
        if let Some((krate, name)) = rest.split_once(" as ") {
            names.insert((krate.to_string(), name.to_string()));
        } else if let Some((krate, group)) = rest.split_once("::") {
            for item in read_group(group) {
                let name = item.last().cloned().unwrap_or_default();
                names.insert((krate.to_string(), name));
            }
            if !group.starts_with('{') {
                names.insert((krate.to_string(), read_path(group).join("::")));
            }
        }
    }
    names
}

/// Whether code names a crate of the workspace as a path (`tablestore_store::…`) or in a
/// `use` (metric names such as `"tablestore_requests_total"` are neither).
fn names_a_crate(code: &str) -> bool {
    code.match_indices("tablestore_").any(|(i, _)| {
        let before = code[..i].chars().last().unwrap_or(' ');
        let ident_end = code[i..]
            .find(|c: char| !is_ident_char(c))
            .map_or(code.len(), |n| i + n);
        !is_ident_char(before)
            && before != '"'
            && (code[ident_end..].starts_with("::") || code[..i].trim_end().ends_with("use"))
    })
}

#[test]
fn each_crate_names_only_the_layers_below_it_may_use() {
    for (src, expected) in NAMES {
        let files = crate_files(src);
        assert!(!files.is_empty(), "read {src}");
        let lib = files
            .iter()
            .find(|(path, _)| path == Path::new("lib.rs"))
            .map(|(_, text)| text.as_str())
            .unwrap_or("");
        let found = names_of(lib);
        let expected: BTreeSet<(String, String)> = expected
            .iter()
            .map(|(k, n)| (k.to_string(), n.to_string()))
            .collect();
        assert_eq!(found, expected, "the crates {src}/lib.rs names");
        // Elsewhere, a crate below is reached through those names only.
        for (path, text) in &files {
            if path == Path::new("lib.rs") {
                continue;
            }
            assert!(
                !names_a_crate(&strip_comments(text)),
                "{src}/{} names a crate directly; use the name its lib.rs gives it",
                path.display()
            );
        }
    }
}

#[test]
fn layering_holds() {
    let allowed: BTreeSet<&str> = ALLOWED.iter().map(|(m, _)| *m).collect();
    let mut violations = Vec::new();
    for src in LAYERED {
        let files = crate_files(src);
        assert!(files.len() > 10, "read the whole of {src}");
        let unplaced: BTreeSet<String> = files
            .iter()
            .filter_map(|(path, _)| module_of(path).into_iter().next())
            .filter(|top| top != "lib" && !allowed.contains(top.as_str()))
            .collect();
        assert!(
            unplaced.is_empty(),
            "modules of {src} without arrows in ALLOWED (add them here and to docs/architecture.md): {unplaced:?}"
        );
        violations.extend(check(&files).into_iter().map(|mut v| {
            v.file = format!("{src}/{}", v.file);
            v
        }));
    }
    assert!(
        violations.is_empty(),
        "imports against the architecture (docs/architecture.md):\n{}",
        violations
            .iter()
            .map(|v| format!("  {}: {} -> {}", v.file, v.from, v.to))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn the_allowed_graph_has_no_cycle() {
    assert_eq!(find_cycle(ALLOWED), None);
    let circular: &[(&str, &[&str])] = &[("a", &["b"]), ("b", &["c"]), ("c", &["a"])];
    assert_eq!(
        find_cycle(circular),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
}

#[test]
fn a_wrong_import_is_caught() {
    let file = |path: &str, text: &str| (PathBuf::from(path), text.to_string());
    let files = vec![
        // Deliberately wrong: protocol reaching into the store, in each spelling.
        file("protocol/json.rs", "use crate::store::KeyRange;\n"),
        file("protocol/batch/mod.rs", "use crate::{model::Entity, query::Page};\n"),
        file("protocol/uri.rs", "fn f() { crate::server::run(); }\n"),
        file("model/edm.rs", "use super::super::protocol::ApiError;\n"),
        file("server/encode.rs", "use crate::server::dispatch::Call;\n"),
        file("server/decode.rs", "use super::intake::Admitted;\n"),
        file("server/cors.rs", "fn f() { crate::store::tier::TieredKv::new(); }\n"),
        file("server/mod.rs", "use crate::store::{open::open, kv::sled::SledKv};\n"),
        // The wire codec running operations, the executor reaching for HTTP, the data tools
        // for the admin client.
        file("protocol/operation.rs", "use crate::exec::{execute, Op};\n"),
        file("exec/entities.rs", "use crate::server::encode::Reply;\n"),
        file("exec/mod.rs", "fn f() { crate::store::encoding::codec::decode_entity(b); }\n"),
        file("data/local.rs", "use crate::admin::run;\n"),
        // Allowed, and prose that merely mentions a path.
        file("query/plan.rs", "use crate::store::{KeyBound, KeyRange};\nuse crate::protocol::filter::Expr;\n"),
        file("realism/mod.rs", "//! Unlike [`crate::server`], this never sees HTTP.\nuse crate::model::Entity;\n/* crate::server */\n"),
        file("server/dispatch.rs", "use super::{decode::decode, encode::encode};\nuse crate::exec;\n"),
        file("insight/mod.rs", "use crate::exec::{BatchOutcome, Outcome};\n"),
        file("admin.rs", "use crate::data::remote;\n"),
        file("query/mod.rs", "fn f() { crate::store::encoding::codec::RawEntity::new(b); }\n"),
    ];
    let found: Vec<(String, String, String)> = check(&files)
        .into_iter()
        .map(|v| (v.file, v.from, v.to))
        .collect();
    let v = |f: &str, a: &str, b: &str| (f.to_string(), a.to_string(), b.to_string());
    assert_eq!(
        found,
        vec![
            v("data/local.rs", "data", "admin"),
            v("exec/entities.rs", "exec", "server"),
            v("exec/mod.rs", "exec", "store::encoding"),
            v("model/edm.rs", "model", "protocol"),
            v("protocol/batch/mod.rs", "protocol", "query"),
            v("protocol/json.rs", "protocol", "store"),
            v("protocol/operation.rs", "protocol", "exec"),
            v("protocol/uri.rs", "protocol", "server"),
            v("query/mod.rs", "query", "store::encoding"),
            v("server/cors.rs", "server", "store::tier"),
            v("server/decode.rs", "server::decode", "server::intake"),
            v("server/encode.rs", "server::encode", "server::dispatch"),
            v("server/mod.rs", "server", "store::kv"),
        ]
    );
}

#[test]
fn a_crate_named_outside_lib_rs_is_caught() {
    assert!(names_a_crate("fn f() { tablestore_store::open(); }"));
    assert!(names_a_crate("use tablestore_server as server;"));
    assert!(!names_a_crate(
        "const M: &str = \"tablestore_requests_total\";"
    ));
    assert!(!names_a_crate("use crate::store::open;"));
}

#[test]
fn a_lib_rs_names_its_layers_in_either_spelling() {
    let lib = "//! use tablestore_server::exec;\nuse tablestore_auth as auth;\nuse tablestore_protocol::{model, protocol};\npub use tablestore_server::query;\nuse std::fmt;\n";
    let pair = |k: &str, n: &str| (k.to_string(), n.to_string());
    assert_eq!(
        names_of(lib),
        BTreeSet::from([
            pair("tablestore_auth", "auth"),
            pair("tablestore_protocol", "model"),
            pair("tablestore_protocol", "protocol"),
            pair("tablestore_server", "query"),
        ])
    );
}
