//! `tablestore admin`: the running server's control endpoints from the command line —
//! `/_tablestore/insight` (statistics and design advice), `/metrics` (Prometheus text),
//! `/_tablestore/faults` (fault-injection rules), and the test-state calls: reset, snapshots
//! and accounts on demand (docs/test-isolation.md). Those endpoints want a request signed
//! with an account key; this signs it (Shared Key Lite, through `auth::canonical`), with the
//! development account's published key unless told another, or sends `--admin-token`, and
//! prints the answer.
//!
//! Depends on auth (signing), config (the development account) and data (connection strings).

use std::ffi::OsString;
use std::io::Read as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::auth::canonical::shared_key_lite_authorization;
use crate::config::{DEV_ACCOUNT, DEV_ACCOUNT_KEY};
use crate::data::cli::stdout_line_bytes;
use crate::data::remote::{Credential, RemoteAccount};
use crate::data::sentences::{status_text, unreachable, what_to_check};

const INSIGHT_PATH: &str = "/_tablestore/insight";
const METRICS_PATH: &str = "/metrics";
const FAULTS_PATH: &str = "/_tablestore/faults";
const RESET_PATH: &str = "/_tablestore/reset";
const SNAPSHOTS_PATH: &str = "/_tablestore/snapshots";
const ACCOUNTS_PATH: &str = "/_tablestore/accounts";

#[derive(Debug, Parser)]
#[command(
    name = "tablestore admin",
    disable_version_flag = true,
    about = "Read a running tablestore's insight, metrics and fault rules; reset it, save and \
             restore snapshots, create and delete accounts (signed with an account key; the \
             development account's by default)"
)]
struct AdminCli {
    #[command(flatten)]
    server: ServerArgs,
    #[command(subcommand)]
    command: AdminCommand,
}

/// Which server, and the key to sign with.
#[derive(Debug, Args)]
struct ServerArgs {
    /// The server's URL (default: http://127.0.0.1 on the port TABLESTORE_PORT names, as the
    /// server reads it, else 10002).
    #[arg(long, value_name = "URL", global = true)]
    url: Option<String>,
    /// The server by a connection string (its TableEndpoint, AccountName and AccountKey),
    /// instead of --url, --account and --account-key.
    #[arg(long, value_name = "CS", hide_env_values = true, global = true)]
    connection_string: Option<String>,
    /// The account whose key signs the requests (with --account-key; without it the
    /// development account signs). For reset and snapshots, also the one account they touch
    /// (without it: the whole server).
    #[arg(long, value_name = "NAME", global = true)]
    account: Option<String>,
    /// The key of --account (base64; default: the development account's published key).
    #[arg(
        long,
        value_name = "KEY",
        env = "TABLESTORE_ACCOUNT_KEY",
        hide_env_values = true,
        global = true
    )]
    account_key: Option<String>,
    /// A PEM certificate to trust for an https:// server started with --cert (e.g. that
    /// certificate itself).
    #[arg(long, value_name = "FILE", global = true)]
    cacert: Option<PathBuf>,
    /// The server's --admin-token, sent as a bearer token instead of a signature (reset,
    /// snapshots and accounts only).
    #[arg(
        long,
        value_name = "TOKEN",
        env = "TABLESTORE_ADMIN_TOKEN",
        hide_env_values = true,
        global = true
    )]
    admin_token: Option<String>,
}

#[derive(Debug, Subcommand)]
enum AdminCommand {
    /// Statistics, query classes and design advice as JSON (GET /_tablestore/insight); only
    /// the signing account's tables are shown.
    Insight {
        /// Wait (up to 2 s) until the requests sent before this one are counted.
        #[arg(long)]
        settle: bool,
    },
    /// The whole server's metrics in Prometheus' text format (GET /metrics).
    Metrics,
    /// The fault-injection rules (docs/realism.md): show them (the default), set them from a
    /// TOML or JSON file, or clear them.
    Faults {
        #[command(subcommand)]
        action: Option<FaultsAction>,
    },
    /// Bring the whole server (or with --account, one account) back to the state it started
    /// with: every table, entity, ACL and service property removed, the --seed data back
    /// (POST /_tablestore/reset).
    Reset,
    /// Named snapshots of the whole server's data (or with --account, one account's).
    Snapshot {
        #[command(subcommand)]
        action: SnapshotAction,
    },
    /// Accounts on demand: create one with a random key, delete one, list them.
    Account {
        #[command(subcommand)]
        action: AccountAction,
    },
}

#[derive(Debug, Subcommand)]
enum SnapshotAction {
    /// Save the data under NAME, replacing a snapshot of that name (PUT).
    Save {
        #[arg(value_name = "NAME")]
        name: String,
    },
    /// Put the data of snapshot NAME back, atomically (POST …/restore).
    Restore {
        #[arg(value_name = "NAME")]
        name: String,
    },
    /// List the snapshots (GET).
    List,
    /// Delete snapshot NAME (DELETE).
    Delete {
        #[arg(value_name = "NAME")]
        name: String,
    },
}

#[derive(Debug, Subcommand)]
enum AccountAction {
    /// Create an account with a random key; prints its name, key and connection string.
    Create {
        /// The account's name (3 to 24 lower-case letters and digits; default: a random one).
        #[arg(long, value_name = "NAME")]
        name: Option<String>,
    },
    /// Delete an account created at run time, with all its data.
    Delete {
        #[arg(value_name = "NAME")]
        name: String,
    },
    /// List the accounts.
    List,
}

#[derive(Debug, Subcommand)]
enum FaultsAction {
    /// Print the rules in force and how often each fired (GET).
    Show,
    /// Replace the rules with those in FILE (`-` reads standard input) (PUT).
    Set {
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
    /// Remove every rule (DELETE).
    Clear,
}

/// Where the server is and how to sign for it.
struct Server {
    origin: String,
    account: String,
    key: Vec<u8>,
    /// Sent as a bearer token instead of a signature, when given.
    admin_token: Option<String>,
    /// The options that gave the account and key, for what to check after a refusal.
    given_by: &'static str,
}

/// A request to send: method, path below the server's root, query, body, and what to print
/// when the answer has no body.
struct Request {
    method: reqwest::Method,
    path: String,
    query: Option<String>,
    body: Option<Vec<u8>>,
    done: Option<String>,
}

impl Request {
    fn new(method: reqwest::Method, path: impl Into<String>) -> Request {
        Request {
            method,
            path: path.into(),
            query: None,
            body: None,
            done: None,
        }
    }

    fn query(mut self, query: Option<String>) -> Request {
        self.query = query;
        self
    }
}

/// `account=A` for the scope of reset and snapshots.
fn scope_query(account: Option<&str>) -> Option<String> {
    account.map(|a| format!("account={a}"))
}

/// Runs `tablestore admin …` (`args` is the whole command line) and returns its exit code:
/// 0 when the server answered 2xx (the body is printed), 1 otherwise (one sentence on
/// standard error), 2 for a bad command line.
pub(crate) fn run(args: &[OsString]) -> ExitCode {
    let mut words: Vec<OsString> = vec![OsString::from("tablestore admin")];
    words.extend(args.iter().skip(2).cloned());
    let cli = match AdminCli::try_parse_from(words) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    match execute(cli) {
        Ok(body) => {
            stdout_line_bytes(&body);
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("tablestore admin: {message}");
            ExitCode::FAILURE
        }
    }
}

fn execute(cli: AdminCli) -> Result<Vec<u8>, String> {
    use reqwest::Method;
    let server = server(&cli.server)?;
    let scope = cli.server.account.as_deref();
    let request = match cli.command {
        AdminCommand::Insight { settle } => {
            Request::new(Method::GET, INSIGHT_PATH).query(settle.then(|| "settle".to_string()))
        }
        AdminCommand::Metrics => Request::new(Method::GET, METRICS_PATH),
        AdminCommand::Faults { action } => match action.unwrap_or(FaultsAction::Show) {
            FaultsAction::Show => Request::new(Method::GET, FAULTS_PATH),
            FaultsAction::Set { file } => Request {
                body: Some(read_rules(&file)?),
                ..Request::new(Method::PUT, FAULTS_PATH)
            },
            FaultsAction::Clear => Request::new(Method::DELETE, FAULTS_PATH),
        },
        AdminCommand::Reset => Request::new(Method::POST, RESET_PATH).query(scope_query(scope)),
        AdminCommand::Snapshot { action } => match action {
            SnapshotAction::Save { name } => Request::new(
                Method::PUT,
                format!("{SNAPSHOTS_PATH}/{}", path_word(&name)),
            )
            .query(scope_query(scope)),
            SnapshotAction::Restore { name } => Request::new(
                Method::POST,
                format!("{SNAPSHOTS_PATH}/{}/restore", path_word(&name)),
            )
            .query(scope_query(scope)),
            SnapshotAction::List => Request::new(Method::GET, SNAPSHOTS_PATH),
            SnapshotAction::Delete { name } => Request {
                done: Some(format!("snapshot {name} deleted")),
                ..Request::new(
                    Method::DELETE,
                    format!("{SNAPSHOTS_PATH}/{}", path_word(&name)),
                )
            },
        },
        AdminCommand::Account { action } => match action {
            AccountAction::Create { name } => Request::new(Method::POST, ACCOUNTS_PATH)
                .query(name.map(|n| format!("name={}", path_word(&n)))),
            AccountAction::Delete { name } => Request {
                done: Some(format!("account {name} deleted")),
                ..Request::new(
                    Method::DELETE,
                    format!("{ACCOUNTS_PATH}/{}", path_word(&name)),
                )
            },
            AccountAction::List => Request::new(Method::GET, ACCOUNTS_PATH),
        },
    };
    send(&server, request, cli.server.cacert.as_deref())
}

/// A name as one path segment: percent-encoded, so that a name with a `/` reaches the server
/// whole (which refuses it with its sentence) instead of naming another path.
fn path_word(name: &str) -> String {
    percent_encoding::utf8_percent_encode(name, percent_encoding::NON_ALPHANUMERIC).to_string()
}

/// The server and the key from `--connection-string`, or `--url`, `--account` and
/// `--account-key`.
fn server(args: &ServerArgs) -> Result<Server, String> {
    use base64::Engine as _;
    if let Some(cs) = &args.connection_string {
        let target = RemoteAccount::from_connection_string(cs).map_err(|e| e.to_string())?;
        let Credential::Key(key) = target.credential else {
            return Err(
                "the control endpoints need an account key: the connection string \
                        carries a SAS, which does not grant them"
                    .to_string(),
            );
        };
        return Ok(Server {
            origin: target.origin,
            account: target.account,
            key,
            admin_token: args.admin_token.clone(),
            given_by: "the connection string's AccountName and AccountKey",
        });
    }
    let url = args.url.clone().unwrap_or_else(default_url);
    let url = url.trim().trim_end_matches('/');
    let origin = match url.split_once("://") {
        Some(("http" | "https", rest)) if !rest.is_empty() => {
            let host = rest.split('/').next().unwrap_or(rest);
            format!("{}://{host}", &url[..url.find("://").unwrap_or(0)])
        }
        _ => {
            return Err(format!(
                "--url {url:?} is not an http:// or https:// URL, e.g. http://127.0.0.1:10002"
            ))
        }
    };
    // The development account signs unless a key is given for --account.
    let (account, key_text) = match (&args.account, &args.account_key) {
        (Some(account), Some(key)) => (account.clone(), key.as_str()),
        (None, Some(key)) => (DEV_ACCOUNT.to_string(), key.as_str()),
        (_, None) => (DEV_ACCOUNT.to_string(), DEV_ACCOUNT_KEY),
    };
    let key = base64::engine::general_purpose::STANDARD
        .decode(key_text.trim())
        .map_err(|_| {
            "--account-key is not base64: give the account's key as printed at start-up".to_string()
        })?;
    Ok(Server {
        origin,
        account,
        key,
        admin_token: args.admin_token.clone(),
        given_by: "--account and --account-key (by default the development account \
                   devstoreaccount1 and its published key)",
    })
}

/// The server a plain `tablestore` started in this environment listens on (`TABLESTORE_FLAVOR=cosmos`
/// moves the default port to the Cosmos DB emulator's).
fn default_url() -> String {
    let cosmos = std::env::var("TABLESTORE_FLAVOR").is_ok_and(|f| f.eq_ignore_ascii_case("cosmos"));
    let default_port = if cosmos {
        crate::config::COSMOS_EMULATOR_PORT
    } else {
        10002
    };
    let port = std::env::var("TABLESTORE_PORT")
        .ok()
        .filter(|p| p.parse::<u16>().is_ok_and(|p| p != 0))
        .unwrap_or_else(|| default_port.to_string());
    format!("http://127.0.0.1:{port}")
}

/// The rules file (or standard input for `-`).
fn read_rules(file: &std::path::Path) -> Result<Vec<u8>, String> {
    if file.as_os_str() == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .map_err(|e| format!("cannot read the rules from standard input: {e}"))?;
        return Ok(bytes);
    }
    std::fs::read(file).map_err(|e| format!("cannot read {}: {e}", file.display()))
}

/// Sends the signed request; the body of a 2xx answer, else one sentence with the status
/// and the server's error code and message.
fn send(
    server: &Server,
    request: Request,
    cacert: Option<&std::path::Path>,
) -> Result<Vec<u8>, String> {
    let mut client = reqwest::blocking::Client::builder().timeout(Duration::from_secs(30));
    if let Some(path) = cacert {
        let pem =
            std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let certificate = reqwest::Certificate::from_pem(&pem)
            .map_err(|_| format!("{} is not a PEM certificate", path.display()))?;
        client = client.add_root_certificate(certificate);
    }
    let client = client
        .build()
        .map_err(|e| format!("cannot start the HTTP client: {}", unreachable(&e)))?;
    let mut url = format!("{}{}", server.origin, request.path);
    if let Some(query) = &request.query {
        url.push('?');
        url.push_str(query);
    }
    let date = chrono::Utc::now()
        .format("%a, %d %b %Y %H:%M:%S GMT")
        .to_string();
    let authorization = match &server.admin_token {
        Some(token)
            if !matches!(
                request.path.as_str(),
                INSIGHT_PATH | METRICS_PATH | FAULTS_PATH
            ) =>
        {
            format!("Bearer {token}")
        }
        _ => shared_key_lite_authorization(
            &server.account,
            &server.key,
            &date,
            &request.path,
            request.query.as_deref(),
        ),
    };
    let shown = format!("{} {url}", request.method);
    let mut builder = client
        .request(request.method, &url)
        .header("x-ms-date", &date)
        .header("x-ms-version", "2019-02-02")
        .header("Authorization", authorization);
    if let Some(body) = request.body {
        builder = builder.body(body);
    }
    let response = builder.send().map_err(|e| {
        let why = unreachable(&e);
        if why.contains("certificate is not trusted") {
            format!(
                "{shown}: {why}: pass it with --cacert (docs/tls.md shows how to make one every \
                 client accepts)"
            )
        } else {
            format!("{shown}: {why} (is the server running there? --url names another)")
        }
    })?;
    let status = response.status();
    let body = response
        .bytes()
        .map_err(|e| format!("{shown}: {}", unreachable(&e)))?
        .to_vec();
    if status.is_success() {
        if body.is_empty() {
            if let Some(done) = request.done {
                return Ok(done.into_bytes());
            }
        }
        return Ok(body);
    }
    let status = status.as_u16();
    let mut sentence = format!("{shown} answered {}", status_text(status, &body));
    if let Some(check) = what_to_check(status, &body, server.given_by) {
        sentence.push_str("; ");
        sentence.push_str(&check);
    }
    Err(sentence)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> AdminCli {
        let mut all = vec!["tablestore admin"];
        all.extend_from_slice(words);
        AdminCli::try_parse_from(all).unwrap()
    }

    #[test]
    fn the_development_account_signs_by_default() {
        let cli = args(&["metrics"]);
        let s = server(&cli.server).unwrap();
        assert_eq!(s.origin, default_url());
        assert!(s.origin.starts_with("http://127.0.0.1:"), "{}", s.origin);
        assert_eq!(s.account, DEV_ACCOUNT);
        use base64::Engine as _;
        assert_eq!(
            base64::engine::general_purpose::STANDARD.encode(&s.key),
            DEV_ACCOUNT_KEY
        );
        let cli = args(&["insight", "--url", "https://h:9/devstoreaccount1/"]);
        assert_eq!(server(&cli.server).unwrap().origin, "https://h:9");
        let cli = args(&[
            "--connection-string",
            "DefaultEndpointsProtocol=http;AccountName=a1;AccountKey=a2V5;TableEndpoint=http://127.0.0.1:7/a1;",
            "faults",
            "clear",
        ]);
        let s = server(&cli.server).unwrap();
        assert_eq!(
            (s.origin.as_str(), s.account.as_str()),
            ("http://127.0.0.1:7", "a1")
        );
        assert_eq!(s.key, b"key");
    }

    #[test]
    fn bad_servers_and_keys_are_one_sentence() {
        let e = server(&args(&["--url", "127.0.0.1:10002", "metrics"]).server)
            .err()
            .unwrap();
        assert!(e.contains("is not an http:// or https:// URL"), "{e}");
        let e = server(&args(&["--account-key", "!!", "metrics"]).server)
            .err()
            .unwrap();
        assert!(e.contains("not base64"), "{e}");
        let e = server(
            &args(&[
                "--connection-string",
                "AccountName=a;SharedAccessSignature=sv=1&sig=2;TableEndpoint=http://h/a",
                "metrics",
            ])
            .server,
        )
        .err()
        .unwrap();
        assert!(e.contains("need an account key"), "{e}");
    }
}
