//! `mail` and `transcripts`: the polled-source pipeline end to end — a poll queues items,
//! a pool of workers extracts, embeds (the built-in static embedder) and writes them.
//!
//! `mail [--messages N] [--workers N]`: an mbox of N messages (default 5,000) written from
//! real English prose (the W3C talk captions bundled as test fixtures and this machine's
//! licence texts): threads with quoted replies, one in ten multipart/alternative with HTML,
//! one in twenty with a text attachment.
//!
//! `transcripts [--meetings N] [--cues N] [--workers N]`: N WebVTT meetings (default 200) of
//! about M cues each (default 500), four speakers taking turns, the same prose.
//!
//! Both print the poll alone (read, split, queue), extraction alone on every core (the floor:
//! parse + prepare, no store), and the end-to-end rate with the worker pool.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use evident_ai::Priority;
use evident_indexers::items::ItemTasks;
use evident_indexers::poll::{PollContext, SourcePoller};
use evident_kb::{Kb, TaskHandlers, TaskSubmitter};
use evident_qualifier::{Qualifier, QueueConfig};
use evident_store::queue::{Clock, PriorityBand, SystemClock, TaskState};
use evident_store_embedded::EmbeddedStore;
use serde_json::json;

use crate::{Args, Rng, rss_mib};

/// Sentences of real prose: the talk captions in the repository and the licence texts here.
fn sentences() -> Vec<String> {
    let mut text = String::new();
    let captions = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../workers/extract/tests/fixtures/transcripts");
    for name in ["kd_speech.vtt", "ay_tensorflow.vtt", "ac_encoding.vtt"] {
        let vtt = std::fs::read_to_string(captions.join(name)).unwrap_or_default();
        for line in vtt.lines() {
            let l = line.trim();
            if !l.is_empty()
                && !l.contains("-->")
                && !l.starts_with("WEBVTT")
                && !l.starts_with("slide-")
                && l.parse::<u32>().is_err()
            {
                text.push_str(l.trim_start_matches("<v Kelly>").trim_end_matches("</v>"));
                text.push(' ');
            }
        }
    }
    for name in ["GPL-3", "Apache-2.0", "MPL-2.0", "LGPL-3"] {
        text.push_str(
            &std::fs::read_to_string(Path::new("/usr/share/common-licenses").join(name))
                .unwrap_or_default(),
        );
        text.push(' ');
    }
    let out: Vec<String> = text
        .split_inclusive(['.', '?', '!'])
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|s| s.split(' ').count() >= 4 && s.len() < 400)
        .collect();
    assert!(out.len() > 100, "not enough prose found");
    out
}

fn paragraph(rng: &mut Rng, pool: &[String], n: usize) -> String {
    (0..n)
        .map(|_| pool[rng.below(pool.len())].as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

const PEOPLE: [(&str, &str); 12] = [
    ("Ann Lee", "ann@acme.io"),
    ("Bob Stone", "bob@acme.io"),
    ("Cy Park", "cy@acme.io"),
    ("Dana Ruiz", "dana@acme.io"),
    ("Eli Katz", "eli@acme.io"),
    ("Fay Chen", "fay@acme.io"),
    ("Gus Ober", "gus@acme.io"),
    ("Hana Sato", "hana@acme.io"),
    ("Ivo Novak", "ivo@acme.io"),
    ("Jo Adams", "jo@acme.io"),
    ("Kim Berg", "kim@acme.io"),
    ("Lou Diaz", "lou@acme.io"),
];

/// An mbox of `n` messages in threads of up to eight.
fn mbox(n: usize, pool: &[String]) -> String {
    let mut rng = Rng(0x5e_ed0f_0a11);
    let mut out = String::with_capacity(n * 3000);
    let mut thread_root = 0;
    for i in 0..n {
        if i % 8 == 0 || rng.below(4) == 0 {
            thread_root = i;
        }
        let (name, email) = PEOPLE[rng.below(PEOPLE.len())];
        let subject = format!(
            "{}topic {}",
            if thread_root == i { "" } else { "Re: " },
            thread_root
        );
        let sentences = 3 + rng.below(8);
        let body = paragraph(&mut rng, pool, sentences);
        let mut headers = format!(
            "From {email} Mon Jan  5 10:00:00 2026\nMessage-ID: <m{i}@acme.io>\nFrom: {name} <{email}>\nTo: dev@lists.acme.io\nSubject: {subject}\nDate: Mon, 05 Jan 2026 {:02}:{:02}:00 +0000\n",
            (i / 60) % 24,
            i % 60
        );
        if thread_root != i {
            let parent = thread_root.max(i.saturating_sub(1 + rng.below(3)));
            let _ = write!(
                headers,
                "In-Reply-To: <m{parent}@acme.io>\nReferences: <m{thread_root}@acme.io> <m{parent}@acme.io>\n"
            );
        }
        let quoted = if thread_root != i {
            format!(
                "\n\nOn Monday someone wrote:\n> {}\n",
                paragraph(&mut rng, pool, 2)
            )
        } else {
            String::new()
        };
        let text = format!("{body}{quoted}\n-- \n{name}\n");
        match i % 20 {
            0 => {
                let _ = write!(
                    out,
                    "{headers}MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"b{i}\"\n\n--b{i}\nContent-Type: text/plain; charset=utf-8\n\n{text}\n--b{i}\nContent-Type: text/plain; name=\"notes-{i}.txt\"\nContent-Disposition: attachment; filename=\"notes-{i}.txt\"\n\n{}\n--b{i}--\n\n",
                    paragraph(&mut rng, pool, 10)
                );
            }
            1 | 11 => {
                let html = format!(
                    "<html><body><p>{}</p></body></html>",
                    body.replace('<', "&lt;")
                );
                let _ = write!(
                    out,
                    "{headers}MIME-Version: 1.0\nContent-Type: multipart/alternative; boundary=\"a{i}\"\n\n--a{i}\nContent-Type: text/plain; charset=utf-8\n\n{text}\n--a{i}\nContent-Type: text/html; charset=utf-8\n\n{html}\n--a{i}--\n\n"
                );
            }
            _ => {
                let _ = write!(
                    out,
                    "{headers}Content-Type: text/plain; charset=utf-8\n\n{text}\n"
                );
            }
        }
    }
    out
}

/// What the benchmarks' pollers run with: the owner `bench`, the default priority, and
/// access to every path (a benchmark reads whatever its operator names).
pub(crate) fn poll_context(kb: &Kb, clock: Arc<dyn Clock>) -> PollContext {
    PollContext {
        indexers: kb.stores().indexers.clone(),
        tasks: TaskSubmitter::new(kb.stores().queue.clone()),
        owner: "bench".into(),
        clock,
        priority: Priority::DEFAULT,
        access: evident_indexers::access::Access::for_tests(std::path::Path::new("/")),
    }
}

pub(crate) struct Pipeline {
    pub(crate) store: EmbeddedStore,
    pub(crate) kb: Kb,
    pub(crate) ctx: PollContext,
    pub(crate) qualifier: Qualifier,
}

pub(crate) async fn pipeline(dir: &Path, workers: usize) -> Pipeline {
    let (store, kb) = crate::git::open_kb(dir).await;
    let chunking = evident_core::chunking::ChunkingConfig::default();
    let mut handlers = TaskHandlers::new(&kb);
    ItemTasks {
        kb: kb.clone(),
        indexers: kb.stores().indexers.clone(),
        chunking,
    }
    .register(&mut handlers);
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let ctx = poll_context(&kb, clock.clone());
    let qualifier = Qualifier {
        queue: kb.stores().queue.clone(),
        handlers,
        clock,
        config: QueueConfig {
            interactive_workers: 0,
            bulk_workers: workers,
            ..QueueConfig::default()
        },
        worker_id: "bench".into(),
        band: PriorityBand::ALL,
    };
    Pipeline {
        store,
        kb,
        ctx,
        qualifier,
    }
}

impl Pipeline {
    pub(crate) async fn register(
        &self,
        kind: &str,
        body: serde_json::Value,
    ) -> evident_store::indexers::IndexerSource {
        let req = evident_indexers::sources::SourceRequest::from_json(body).expect("request");
        evident_indexers::sources::register_with(
            &self.kb,
            &self.ctx.access,
            kind,
            &req,
            SystemClock.now_ms(),
        )
        .await
        .expect("register")
    }

    /// Polls once (timed), then lets the pool work until the queue is empty (timed).
    pub(crate) async fn run(
        &self,
        poller: &dyn SourcePoller,
        id: &str,
    ) -> (Duration, Duration, usize, usize) {
        let source = self
            .kb
            .stores()
            .indexers
            .get_source(&evident_store::indexers::SourceKey::new("bench", id))
            .await
            .expect("get")
            .expect("source");
        let cancel = tokio_util::sync::CancellationToken::new();
        let wake = self.ctx.tasks.wake_signal();
        let t = Instant::now();
        let pool = tokio::spawn(evident_qualifier::run_pool(
            self.qualifier.clone(),
            cancel.clone(),
            wake,
        ));
        poller.poll(&source).await.expect("poll").expect("lease");
        let poll = t.elapsed();
        self.ctx.tasks.notify();
        let queue = self.kb.stores().queue.clone();
        let (done, errors) = loop {
            let c = queue.counts(None).await.expect("counts");
            let open = c.state(TaskState::Queued)
                + c.state(TaskState::Processing)
                + c.state(TaskState::RetryWait);
            if open == 0 {
                break (
                    c.state(TaskState::Done) as usize,
                    c.state(TaskState::Error) as usize,
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        let total = t.elapsed();
        cancel.cancel();
        pool.await.expect("pool");
        (poll, total, done, errors)
    }

    /// Prints the end-to-end rate of `items` `unit` through `stages` over `total` and the
    /// memory, and closes the store: the rate and the peak RSS in MiB.
    fn finish(
        self,
        stages: &str,
        items: usize,
        unit: &str,
        run: (Duration, usize, usize),
    ) -> (f64, f64) {
        let (total, done, errors) = run;
        let rate = items as f64 / total.as_secs_f64();
        println!(
            "end to end (poll → queue → {stages} → embed → store): {:.2} s, {rate:.0} {unit}/s ({done} tasks done, {errors} errors)",
            total.as_secs_f64()
        );
        let (rss, peak) = rss_mib();
        println!("memory: RSS {rss:.0} MiB, peak {peak:.0} MiB");
        self.store.close().expect("close");
        (rate, peak)
    }
}

fn cores() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
}

/// Runs `f` over `items` on every core; returns the elapsed time and the sum of its results.
fn on_every_core<T: Sync>(items: &[T], f: impl Fn(&T) -> usize + Sync) -> (Duration, usize) {
    let t = Instant::now();
    let total = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for part in items.chunks(items.len().div_ceil(cores()).max(1)) {
            let (f, total) = (&f, &total);
            s.spawn(move || {
                let n: usize = part.iter().map(f).sum();
                total.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
            });
        }
    });
    (t.elapsed(), total.into_inner())
}

pub async fn mail(args: &Args) {
    let n = args.usize("messages", 5_000);
    let workers = args.usize("workers", 8);
    let dir = tempfile::tempdir().expect("tmp");
    let pool = sentences();
    let text = mbox(n, &pool);
    let bytes = text.len();
    let path = dir.path().join("dev.mbox");
    std::fs::write(&path, &text).expect("write");
    println!(
        "mail: {n} messages, {:.1} MiB mbox, {workers} workers, {} cores",
        bytes as f64 / 1048576.0,
        cores()
    );

    // The floor: split + parse + prepare on every core, no store.
    let entries = evident_extract::mail::split_mbox(text.as_bytes());
    let scope = evident_core::Scope::client("bench");
    let chunking = evident_core::chunking::ChunkingConfig::default();
    let (floor, chunks) = on_every_core(&entries, |e| {
        let email = evident_extract::mail::parse_email(&e.bytes).expect("parse");
        evident_extract::mail::email_sources(
            &email,
            &evident_extract::mail::MailContext {
                scope: &scope,
                source_id: "bench",
                mailbox: "dev",
                max_attachment_bytes: 1 << 20,
                chunking: &chunking,
                truncated_at: None,
            },
        )
        .iter()
        .map(|s| s.chunks.len())
        .sum()
    });
    let floor_rate = n as f64 / floor.as_secs_f64();
    println!("extraction alone (every core): {floor_rate:.0} messages/s, {chunks} chunks");

    let p = pipeline(dir.path(), workers).await;
    let src = p
        .register("mbox", json!({"clientId": "bench", "path": path}))
        .await;
    let poller = evident_indexers::mail::MboxPoller { ctx: p.ctx.clone() };
    let (poll, total, done, errors) = p.run(&poller, &src.id).await;
    println!(
        "poll (read, split, queue): {:.2} s, {:.0} messages/s",
        poll.as_secs_f64(),
        n as f64 / poll.as_secs_f64()
    );
    let (rate, peak) = p.finish("extract", n, "messages", (total, done, errors));
    println!(
        "{}",
        json!({
            "suite": "mail", "messages": n, "workers": workers, "mbox_mib": bytes as f64 / 1048576.0,
            "extraction_messages_per_s": floor_rate.round(),
            "poll_messages_per_s": (n as f64 / poll.as_secs_f64()).round(),
            "end_to_end_messages_per_s": rate.round(),
            "errors": errors, "peak_rss_mib": peak.round(),
        })
    );
}

/// WebVTT meetings: four speakers taking turns of one to six cues.
fn meetings(n: usize, cues: usize, pool: &[String]) -> Vec<String> {
    let mut rng = Rng(0x7ea5_cafe);
    let speakers = ["Ann Lee", "Bob Stone", "Cy Park", "Dana Ruiz"];
    (0..n)
        .map(|m| {
            let mut vtt = String::from("WEBVTT\n\n");
            let mut at = 0u64;
            let mut speaker = speakers[m % 4];
            let mut left = 0;
            for i in 0..cues {
                if left == 0 {
                    speaker = speakers[rng.below(4)];
                    left = 1 + rng.below(6);
                }
                left -= 1;
                let len = 1500 + rng.below(3000) as u64;
                let line = &pool[rng.below(pool.len())];
                let fmt = |ms: u64| {
                    format!(
                        "{:02}:{:02}:{:02}.{:03}",
                        ms / 3_600_000,
                        ms / 60_000 % 60,
                        ms / 1000 % 60,
                        ms % 1000
                    )
                };
                let _ = write!(
                    vtt,
                    "{}\n{} --> {}\n<v {speaker}>{}\n\n",
                    i + 1,
                    fmt(at),
                    fmt(at + len),
                    line.chars().take(120).collect::<String>()
                );
                at += len;
            }
            vtt
        })
        .collect()
}

pub async fn transcripts(args: &Args) {
    let n = args.usize("meetings", 200);
    let cues = args.usize("cues", 500);
    let workers = args.usize("workers", 8);
    let dir = tempfile::tempdir().expect("tmp");
    let pool = sentences();
    let files = meetings(n, cues, &pool);
    let folder = dir.path().join("meetings");
    std::fs::create_dir_all(&folder).expect("mkdir");
    for (i, f) in files.iter().enumerate() {
        std::fs::write(folder.join(format!("meeting-{i:04}.vtt")), f).expect("write");
    }
    let total_cues = n * cues;
    println!(
        "transcripts: {n} meetings × {cues} cues = {total_cues} cues, {workers} workers, {} cores",
        cores()
    );

    let scope = evident_core::Scope::client("bench");
    let chunking = evident_core::chunking::ChunkingConfig::default();
    let (floor, chunks) = on_every_core(&files, |text| {
        let t = evident_extract::transcript::parse_vtt(text).expect("parse");
        evident_extract::meeting::transcript_source(
            &t,
            &evident_extract::meeting::MeetingContext {
                scope: &scope,
                source_id: "bench",
                meeting_id: "m",
                uri: "m.vtt",
                fallback_title: None,
                date: None,
                chunking: &chunking,
            },
        )
        .map_or(0, |s| s.chunks.len())
    });
    let floor_rate = total_cues as f64 / floor.as_secs_f64();
    println!("parse + prepare alone (every core): {floor_rate:.0} cues/s, {chunks} chunks");

    let p = pipeline(dir.path(), workers).await;
    let src = p
        .register("transcripts", json!({"clientId": "bench", "path": folder}))
        .await;
    let poller = evident_indexers::meetings::TranscriptsPoller::new(p.ctx.clone());
    let (poll, total, done, errors) = p.run(&poller, &src.id).await;
    println!("poll (scan, read, queue): {:.2} s", poll.as_secs_f64());
    let (rate, peak) = p.finish("parse", total_cues, "cues", (total, done, errors));
    println!(
        "{}",
        json!({
            "suite": "transcripts", "meetings": n, "cues": total_cues, "workers": workers,
            "prepare_cues_per_s": floor_rate.round(),
            "end_to_end_cues_per_s": rate.round(),
            "errors": errors, "peak_rss_mib": peak.round(),
        })
    );
}
