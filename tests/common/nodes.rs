//! Several `tablestore` processes (the real binary, each on an ephemeral loopback port) over
//! one database URL: the scale-out tests' harness. Nodes can be killed with SIGKILL and
//! started again; none knows the others.

use std::time::Duration;

use super::child::{ChildServer, Client, Signer};

/// N nodes over one store URL (`--store <url>`).
pub struct Nodes {
    store_url: String,
    extra_args: Vec<String>,
    /// `None` where a node was killed and not started again.
    nodes: Vec<Option<ChildServer>>,
    /// Each node's `--location` (unused by a database store, but the binary wants a folder).
    dirs: Vec<tempfile::TempDir>,
}

impl Nodes {
    /// Starts `n` nodes over `store_url`, each with `extra_args` as well.
    pub fn start(n: usize, store_url: &str, extra_args: &[&str]) -> Nodes {
        let mut nodes = Nodes {
            store_url: store_url.to_string(),
            extra_args: extra_args.iter().map(|a| a.to_string()).collect(),
            nodes: Vec::new(),
            dirs: Vec::new(),
        };
        for _ in 0..n {
            nodes.dirs.push(tempfile::tempdir().expect("temp dir"));
            nodes.nodes.push(None);
            nodes.restart(nodes.nodes.len() - 1);
        }
        nodes
    }

    /// Starts `n` nodes over `store_url` at the same moment (one thread each), as an
    /// orchestrator starting replicas on a fresh database would: the schema is created by
    /// whichever comes first. Fails with every node's start-up failure.
    pub fn start_together(n: usize, store_url: &str) -> Result<Nodes, String> {
        let dirs: Vec<tempfile::TempDir> = (0..n)
            .map(|_| tempfile::tempdir().expect("temp dir"))
            .collect();
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(n));
        let handles: Vec<_> = dirs
            .iter()
            .map(|dir| {
                let dir = dir.path().to_path_buf();
                let url = store_url.to_string();
                let barrier = barrier.clone();
                std::thread::spawn(move || {
                    barrier.wait();
                    ChildServer::try_start(&dir, &["--store", &url])
                })
            })
            .collect();
        let mut nodes = Vec::new();
        let mut failures = Vec::new();
        for (i, h) in handles.into_iter().enumerate() {
            match h.join().expect("start-up thread") {
                Ok(node) => nodes.push(Some(node)),
                Err(f) => failures.push(format!("node {i}: {f:?}")),
            }
        }
        if !failures.is_empty() {
            return Err(failures.join("\n"));
        }
        Ok(Nodes {
            store_url: store_url.to_string(),
            extra_args: Vec::new(),
            nodes,
            dirs,
        })
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Node `i`; panics if it was killed and not restarted.
    pub fn node(&self, i: usize) -> &ChildServer {
        self.nodes[i]
            .as_ref()
            .unwrap_or_else(|| panic!("node {i} is not running"))
    }

    /// `http://127.0.0.1:<port>` of node `i`.
    pub fn endpoint(&self, i: usize) -> String {
        self.node(i).endpoint()
    }

    /// A signing client for the development account on node `i`.
    pub fn client(&self, i: usize) -> Client {
        Client::new(&self.endpoint(i), Signer::dev())
    }

    /// One client per running node, in node order.
    pub fn clients(&self) -> Vec<Client> {
        (0..self.len())
            .filter(|i| self.nodes[*i].is_some())
            .map(|i| self.client(i))
            .collect()
    }

    /// `kill -9` node `i`: no flush, no clean shutdown.
    pub fn kill9(&mut self, i: usize) {
        if let Some(node) = self.nodes[i].take() {
            node.kill9();
        }
    }

    /// Starts node `i` (again) over the same store; it gets a new port. A running node `i` is
    /// killed first.
    pub fn restart(&mut self, i: usize) {
        self.kill9(i);
        let dir = self.dirs[i].path().to_path_buf();
        let mut args: Vec<&str> = vec!["--store", &self.store_url];
        args.extend(self.extra_args.iter().map(String::as_str));
        match ChildServer::try_start(&dir, &args) {
            Ok(node) => self.nodes[i] = Some(node),
            Err(f) => panic!("node {i} over {} did not start: {f:?}", self.store_url),
        }
    }

    /// What node `i` printed on stderr so far (for failure messages).
    pub fn stderr(&self, i: usize) -> String {
        self.nodes[i]
            .as_ref()
            .map(ChildServer::stderr_so_far)
            .unwrap_or_default()
    }
}

/// Polls `GET /_health` on `client` until it answers 200 or `limit` passes.
pub async fn wait_healthy(client: &Client, limit: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    while tokio::time::Instant::now() < deadline {
        if client.healthy().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}
