//! Shared by the binary's integration tests: a real `evident serve` on port 0 over a data
//! dir, found by reading its own banner (no sleeps), and the CLI run against it. A server is
//! killed when dropped, so a failing test never leaves one running (an orphaned server would
//! keep the test runner's pipes, and whatever else it inherited, open).

#![allow(dead_code)] // each test binary uses its own part of this module

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStderr, Command, ExitStatus, Stdio};

pub const BIN: &str = env!("CARGO_BIN_EXE_evident");

pub struct Server {
    pub child: Child,
    pub stderr: BufReader<ChildStderr>,
    pub url: String,
    /// The server's local operator token.
    pub token: String,
}

impl Server {
    pub fn start(data: &Path) -> Server {
        Self::start_with(data, &[], &[])
    }

    /// `evident serve` with `args` after the listen address and data dir, and `env`.
    pub fn start_with(data: &Path, args: &[&std::ffi::OsStr], env: &[(&str, &str)]) -> Server {
        let mut child = Command::new(BIN)
            .args(["serve", "--listen", "127.0.0.1:0", "--data"])
            .arg(data)
            .args(args)
            .env("RUST_LOG", "warn")
            .envs(env.iter().copied())
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("start evident serve");
        let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
        let line = read_until(&mut stderr, "listening on ");
        let url = line
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .expect("url in banner")
            .to_string();
        let token = std::fs::read_to_string(data.join("local-token")).expect("local token written");
        Server {
            child,
            stderr,
            url,
            token: token.trim().to_string(),
        }
    }

    /// Runs the CLI against this server with its operator token: (success, stdout, stderr).
    pub fn cli(&self, args: &[&str], stdin: Option<&str>) -> (bool, String, String) {
        run_cli(&self.url, Some(&self.token), args, stdin)
    }

    /// Runs `evident CMD REST…` (`cmd` split at whitespace, then each of `rest` as one argument:
    /// free text, ids) and asserts it succeeded; its stdout. The one-line command keeps a
    /// test's steps readable where the written-out argument arrays repeated each other.
    pub fn ok(&self, cmd: &str, rest: &[&str]) -> String {
        self.ok_in(cmd, rest, None)
    }

    /// [`Server::ok`] with `stdin` written to the CLI.
    pub fn ok_in(&self, cmd: &str, rest: &[&str], stdin: Option<&str>) -> String {
        let args = argv(cmd, rest);
        let (ok, out, err) = self.cli(&args, stdin);
        assert!(ok, "`evident {}` failed: {err}", args.join(" "));
        out
    }

    /// Runs `evident CMD REST…` like [`Server::ok`] and asserts it failed; its stderr.
    pub fn refused(&self, cmd: &str, rest: &[&str]) -> String {
        self.refused_in(cmd, rest, None)
    }

    /// [`Server::refused`] with `stdin` written to the CLI.
    pub fn refused_in(&self, cmd: &str, rest: &[&str], stdin: Option<&str>) -> String {
        let args = argv(cmd, rest);
        let (ok, out, err) = self.cli(&args, stdin);
        assert!(
            !ok,
            "`evident {}` should fail; it said: {out}",
            args.join(" ")
        );
        err
    }

    /// SIGTERM, then waits for the server's goodbye and its exit.
    pub fn terminate(mut self) -> ExitStatus {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill");
        assert!(status.success());
        read_until(&mut self.stderr, "evident stopped");
        self.child.wait().expect("wait")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `cmd` split at whitespace followed by `rest`, each whole.
pub fn argv<'a>(cmd: &'a str, rest: &[&'a str]) -> Vec<&'a str> {
    cmd.split_whitespace().chain(rest.iter().copied()).collect()
}

/// Reads the server's stderr up to the line containing `needle`, which it returns.
pub fn read_until(r: &mut BufReader<ChildStderr>, needle: &str) -> String {
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        let n = r.read_line(&mut line).expect("read stderr");
        assert!(
            n > 0,
            "server exited before printing `{needle}`; it said:\n{seen}"
        );
        seen.push_str(&line);
        if line.contains(needle) {
            return line;
        }
    }
}

/// Runs the CLI against `server` (with `token` when given): (success, stdout, stderr).
pub fn run_cli(
    server: &str,
    token: Option<&str>,
    args: &[&str],
    stdin: Option<&str>,
) -> (bool, String, String) {
    let mut cmd = Command::new(BIN);
    cmd.args(args).env("EVIDENT_SERVER", server);
    if let Some(t) = token {
        cmd.env("EVIDENT_TOKEN", t);
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run evident");
    if let Some(text) = stdin {
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(text.as_bytes())
            .expect("write stdin");
    }
    drop(child.stdin.take());
    let out = child.wait_with_output().expect("output");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
