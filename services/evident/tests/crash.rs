//! Crash test: `evident serve` works through ≥ 2,000 queued ingests while being killed with
//! SIGKILL at random moments 20 times and restarted each time. At the end every task is
//! `done`, nothing is duplicated, and the store's integrity check passes.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};

const BIN: &str = env!("CARGO_BIN_EXE_evident");
const TASKS: usize = 2_000;
const KILLS: usize = 20;

/// Starts the server; its stderr is drained by a thread into a channel of lines (a server
/// whose stderr pipe fills up would block on logging).
fn start(data: &Path, workers: bool) -> (Child, Receiver<String>, String) {
    let mut child = Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--data"])
        .arg(data)
        .env("EVIDENT__EMBEDDER__KIND", "hashing")
        .env("EVIDENT__EMBEDDER__DIM", "32")
        // This test is about durability; the local development mode keeps its raw HTTP
        // requests free of tokens (auth is tested through the router and in cli.rs).
        .env("EVIDENT__AUTH__REQUIRED", "false")
        .env(
            "EVIDENT__QUEUE__BULK_WORKERS",
            if workers { "2" } else { "0" },
        )
        .env(
            "EVIDENT__QUEUE__INTERACTIVE_WORKERS",
            if workers { "1" } else { "0" },
        )
        // Short leases, so tasks in flight at a kill return to the queue quickly.
        .env("EVIDENT__QUEUE__LEASE_SECS", "2")
        .env("EVIDENT__QUEUE__HEARTBEAT_SECS", "1")
        .env("RUST_LOG", "evident_qualifier=info,warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start");
    let stderr = BufReader::new(child.stderr.take().expect("stderr"));
    let (tx, lines) = channel();
    std::thread::spawn(move || {
        for line in stderr.lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let addr = loop {
        let line = lines.recv().expect("server exited during start-up");
        if line.contains("listening on ") {
            break line
                .split_whitespace()
                .find(|w| w.starts_with("http://"))
                .expect("url")
                .trim_start_matches("http://")
                .to_string();
        }
    };
    (child, lines, addr)
}

/// A minimal HTTP/1.1 request (the test needs no client library).
fn http(addr: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).expect("connect");
    write!(s, "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len()).expect("write");
    let mut resp = String::new();
    s.read_to_string(&mut resp).expect("read");
    let status = resp
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = resp
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

fn done_count(addr: &str) -> u64 {
    let (status, body) = http(addr, "GET", "/api/v1/queue?limit=1", "");
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).expect("json");
    v["counts"]["done"].as_u64().expect("done count")
}

/// xorshift: "random" kill points, reproducible.
fn next(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

#[test]
fn sigkill_at_random_moments_loses_and_duplicates_nothing() {
    let data = tempfile::tempdir().expect("data");
    // Enqueue everything first (no workers), so the kills land while work is in progress.
    let (mut child, _enqueue_log, addr) = start(data.path(), false);
    for i in 0..TASKS {
        let body = serde_json::json!({
            "clientId": "acme",
            "sourceUrn": format!("doc:{i}"),
            "kind": "doc",
            "content": format!("Crash-test document {i} about subsystem {} and its on-call rota.", i % 37),
        });
        let (status, resp) = http(&addr, "POST", "/api/v1/ingest-queue", &body.to_string());
        assert_eq!(status, 202, "{resp}");
    }
    child.kill().expect("SIGKILL");
    child.wait().expect("reap");
    let (restarted, mut stderr, _) = start(data.path(), true);
    child = restarted;
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..KILLS {
        // Let the workers finish a random number of tasks, then kill without warning.
        let wait_for = 1 + next(&mut seed) % 80;
        // Lines come from this process only, so 20 rounds consume ≤ 1,600 completions and
        // work never runs out before the last kill.
        let mut seen = 0;
        while seen < wait_for {
            let line = stderr
                .recv_timeout(std::time::Duration::from_secs(60))
                .expect("the server stopped making progress");
            if line.contains("task done") || line.contains("task will be retried") {
                seen += 1;
            }
        }
        child.kill().expect("SIGKILL");
        child.wait().expect("reap");
        (child, stderr, _) = start(data.path(), true);
    }
    // Let it finish. The server is a real process: poll its queue.
    let addr = {
        child.kill().expect("SIGKILL");
        child.wait().expect("reap");
        let (c, e, a) = start(data.path(), true);
        (child, stderr) = (c, e);
        a
    };
    let mut polls = 0;
    while done_count(&addr) < TASKS as u64 {
        std::thread::sleep(std::time::Duration::from_millis(100));
        polls += 1;
        if polls >= 1_200 {
            // Say which tasks are stuck and why, so a failure can be diagnosed from CI output.
            let stuck: Vec<String> = ["queued", "processing", "retry_wait", "error"]
                .iter()
                .map(|state| {
                    http(
                        &addr,
                        "GET",
                        &format!("/api/v1/queue?state={state}&limit=5"),
                        "",
                    )
                    .1
                })
                .collect();
            let log: Vec<String> = stderr
                .try_iter()
                .filter(|l| !l.contains("task done") && !l.trim_start().starts_with("at "))
                .collect();
            panic!(
                "not finished after 2 minutes: {} done\nstuck: {stuck:#?}\nserver log: {:#?}",
                done_count(&addr),
                &log[..log.len().min(60)]
            );
        }
    }
    let (status, body) = http(&addr, "GET", "/api/v1/queue?limit=1", "");
    assert_eq!(status, 200);
    let v: serde_json::Value = serde_json::from_str(&body).expect("json");
    for state in ["queued", "processing", "retry_wait", "error"] {
        assert_eq!(v["counts"][state], 0, "{state}: {body}");
    }
    assert_eq!(v["counts"]["done"], TASKS as u64);

    // Graceful stop, then inspect the store itself.
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    while stderr.recv().is_ok() {}
    assert!(child.wait().expect("wait").success());
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let report = rt.block_on(async {
        let store =
            evident_store_embedded::EmbeddedStore::open(evident_store_embedded::EmbeddedOptions {
                dir: data.path().to_path_buf(),
                vector_space: evident_store::VectorSpace {
                    embedder: "hashing:fnv1a-word-trigram:v1:32".into(),
                    dim: 32,
                },
                background_indexer: false,
            })
            .expect("reopen");
        store.check_integrity().await.expect("integrity")
    });
    assert!(report.is_ok(), "{report:?}");
    assert_eq!(report.chunks, TASKS as i64, "no chunk lost or duplicated");
}
