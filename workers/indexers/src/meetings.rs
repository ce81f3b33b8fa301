//! The meetings indexer: a folder of transcripts (WebVTT, SRT, JSON) and, optionally, of
//! recordings that an operator-configured command transcribes.
//!
//! A transcript file is a meeting: its id is the file's path in the folder without the
//! extension, so `2026/standup.vtt` and the recording `2026/standup.m4a` are one meeting.
//! New or changed transcripts go on the queue as `ingest-transcript` items; a removed one has
//! its meeting purged.
//!
//! Recordings move through `uploaded → transcribing → transcribed → indexed | failed`, kept in
//! a cursor per recording so every replica sees the same state:
//! - `uploaded`: seen (or changed since it was last transcribed).
//! - `transcribing`: the command runs in the background (polls of other sources go on). The
//!   state is written *before* the command starts: if the process dies, the recording stays
//!   `transcribing` until `stuckAfterSecs` have passed, and is then started again.
//! - `transcribed`: the transcript is kept in the state until it is queued.
//! - `indexed`: queued as a transcript; nothing more to do until the file changes.
//! - `failed`: the command failed `maxAttempts` times (or its output cannot be read); the
//!   reason is kept and shown in the source's stats. A changed file starts over.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use evident_extract::meeting::meeting_urn;
use evident_extract::transcript::{TranscriptFormat, parse};
use evident_store::indexers::{IndexerSource, SourceKey};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::folder;
use crate::items::ItemTask;
use crate::poll::{LeasedPoller, PollContext, PollError, PollReport};
use crate::report::{RecordingsReport, TranscriptsReport, examples};
pub use evident_sources::commands::TranscriptionCommand;
pub use evident_sources::kinds::meetings::{RecordingsConfig, TranscriptsConfig};

/// Transcripts larger than this are not read (a day of speech is ~1 MB of WebVTT).
const MAX_TRANSCRIPT_BYTES: u64 = 64 * 1024 * 1024;

fn is_transcript(path: &Path) -> bool {
    TranscriptFormat::from_path(&path.to_string_lossy()).is_some()
}

/// A meeting's id: its path in the folder without the extension.
pub fn meeting_id(rel: &str) -> String {
    match rel.rsplit_once('.') {
        Some((stem, ext)) if !ext.contains('/') => stem.to_string(),
        _ => rel.to_string(),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RecordingState {
    Uploaded,
    Transcribing,
    Transcribed,
    Indexed,
    Failed,
}

/// A recording's cursor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Recording {
    pub state: RecordingState,
    /// When the state was entered (ms).
    pub since: i64,
    /// The file as it was when this state was entered: a change starts over.
    pub mtime_ms: i64,
    pub len: u64,
    pub attempts: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The transcript, between `transcribed` and `indexed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript: Option<String>,
}

const REC_PREFIX: &str = "recording:";

/// Polls `kind = "transcripts"` sources.
pub struct TranscriptsPoller {
    pub ctx: PollContext,
    /// Recordings being transcribed by this process (`source/rel`).
    running: Arc<Mutex<HashSet<String>>>,
}

impl TranscriptsPoller {
    pub fn new(ctx: PollContext) -> TranscriptsPoller {
        TranscriptsPoller {
            ctx,
            running: Arc::default(),
        }
    }

    /// Whether a transcription started by this process is still running (tests wait on it).
    pub fn transcribing(&self) -> usize {
        self.running.lock().len()
    }

    async fn queue_transcript(
        &self,
        source: &IndexerSource,
        rel: &str,
        uri: &str,
        format: TranscriptFormat,
        text: String,
    ) -> Result<(), PollError> {
        let meeting = meeting_id(rel);
        let task = ItemTask::IngestTranscript {
            v: 1,
            source_id: source.id.clone(),
            meeting_id: meeting.clone(),
            uri: uri.to_string(),
            format,
            text,
            date: None,
        };
        task.queue(&self.ctx, source, &meeting_urn(&source.id, &meeting))
            .await
    }

    async fn poll_transcripts(
        &self,
        source: &IndexerSource,
        cfg: &TranscriptsConfig,
    ) -> Result<TranscriptsReport, PollError> {
        let scan = folder::scan(
            &self.ctx,
            &source.key(),
            &cfg.path,
            MAX_TRANSCRIPT_BYTES,
            is_transcript,
        )
        .await?;
        let mut queued = 0u64;
        for f in &scan.changed {
            let Some(format) = TranscriptFormat::from_path(&f.rel) else {
                continue;
            };
            let text = String::from_utf8_lossy(&f.bytes).into_owned();
            let uri = f.path.display().to_string();
            self.queue_transcript(source, &f.rel, &uri, format, text)
                .await?;
            folder::mark(&self.ctx, &source.key(), &f.rel, &f.state).await?;
            queued += 1;
        }
        let folder = folder::settle(&self.ctx, source, scan, queued, |rel| {
            meeting_urn(&source.id, &meeting_id(rel))
        })
        .await?;
        Ok(TranscriptsReport {
            transcripts: queued,
            folder,
            recordings: None,
        })
    }

    async fn put_recording(
        &self,
        source: &SourceKey,
        rel: &str,
        rec: &Recording,
    ) -> Result<(), PollError> {
        self.ctx
            .set_cursor(source, &format!("{REC_PREFIX}{rel}"), &json!(rec))
            .await
    }

    /// The operator's command a source names with the source's limits, looked up at every
    /// poll (the source names it; the configuration defines it).
    fn transcription(&self, rcfg: &RecordingsConfig) -> Result<Transcription, PollError> {
        Ok(Transcription {
            command: self
                .ctx
                .access
                .commands
                .transcription(&rcfg.command)?
                .clone(),
            timeout_secs: rcfg.timeout_secs,
            max_attempts: rcfg.max_attempts,
        })
    }

    /// Advances every recording one step; starts transcriptions in the background.
    async fn poll_recordings(
        &self,
        source: &IndexerSource,
        cfg: &TranscriptsConfig,
        rcfg: &RecordingsConfig,
    ) -> Result<RecordingsReport, PollError> {
        let now = self.ctx.clock.now_ms();
        let transcription = self.transcription(rcfg)?;
        let mut known = self.known_recordings(source).await?;
        let root = cfg.path.clone();
        let r2 = rcfg.clone();
        let files: Vec<(String, PathBuf, i64, u64)> =
            tokio::task::spawn_blocking(move || list_files(&root, &|p: &Path| r2.is_recording(p)))
                .await
                .map_err(|e| PollError::internal("listing recordings", e))?;
        let mut present = HashSet::new();
        for (rel, path, mtime_ms, len) in files {
            present.insert(rel.clone());
            let mut rec = current(known.get(&rel), mtime_ms, len, now);
            let job = format!("{}/{rel}", source.key());
            if rec.state == RecordingState::Transcribing
                && !self.running.lock().contains(&job)
                && now - rec.since >= rcfg.stuck_after_ms()
            {
                tracing::warn!(source_id = %source.id, recording = %rel, "transcription stuck (its process is gone); starting again");
                rec.state = RecordingState::Uploaded;
                rec.since = now;
            }
            match rec.state {
                RecordingState::Uploaded if rec.attempts >= rcfg.max_attempts => {
                    rec.state = RecordingState::Failed;
                    rec.since = now;
                    rec.error.get_or_insert_with(|| "too many attempts".into());
                }
                RecordingState::Uploaded => {
                    rec.state = RecordingState::Transcribing;
                    rec.since = now;
                    rec.attempts += 1;
                    // Recorded before the command starts: a crash leaves a visible, recoverable
                    // `transcribing`, never a silent gap.
                    self.put_recording(&source.key(), &rel, &rec).await?;
                    let t = transcription.clone();
                    self.start_transcription(source, t, rel.clone(), path, rec.clone());
                    known.insert(rel, rec);
                    continue;
                }
                RecordingState::Transcribed => {
                    let text = rec.transcript.take().unwrap_or_default();
                    let uri = path.display().to_string();
                    self.queue_transcript(
                        source,
                        &rel,
                        &uri,
                        transcription.command.output_format,
                        text,
                    )
                    .await?;
                    rec.state = RecordingState::Indexed;
                    rec.since = now;
                }
                _ => {}
            }
            if known.get(&rel) != Some(&rec) {
                self.put_recording(&source.key(), &rel, &rec).await?;
            }
            known.insert(rel, rec);
        }
        // A recording removed from the folder: forget it (its transcript's meeting stays
        // while the transcript does).
        for rel in known
            .keys()
            .filter(|k| !present.contains(*k))
            .cloned()
            .collect::<Vec<_>>()
        {
            self.ctx
                .forget_cursor(&source.key(), &format!("{REC_PREFIX}{rel}"))
                .await?;
            known.remove(&rel);
        }
        Ok(report(&known))
    }

    /// The recordings seen before, by path relative to the folder, from the source's cursors.
    async fn known_recordings(
        &self,
        source: &IndexerSource,
    ) -> Result<BTreeMap<String, Recording>, PollError> {
        Ok(self
            .ctx
            .cursors(&source.key(), REC_PREFIX)
            .await?
            .into_iter()
            .filter_map(|(k, v)| {
                Some((
                    k.strip_prefix(REC_PREFIX)?.to_string(),
                    serde_json::from_value(v).ok()?,
                ))
            })
            .collect())
    }

    /// Runs the command in the background and records the outcome as the next state.
    fn start_transcription(
        &self,
        source: &IndexerSource,
        t: Transcription,
        rel: String,
        input: PathBuf,
        rec: Recording,
    ) {
        let job = format!("{}/{rel}", source.key());
        self.running.lock().insert(job.clone());
        let (ctx, running, source_id) = (self.ctx.clone(), self.running.clone(), source.key());
        tokio::spawn(async move {
            let outcome = transcribe(&t.command, t.timeout_secs, &input).await;
            let mut rec = rec;
            rec.since = ctx.clock.now_ms();
            match outcome {
                Ok(text) => {
                    rec.state = RecordingState::Transcribed;
                    rec.transcript = Some(text);
                    rec.error = None;
                }
                Err(reason) => {
                    tracing::warn!(source_id = %source_id, recording = %rel, error = %reason, "transcription failed");
                    rec.state = if rec.attempts >= t.max_attempts {
                        RecordingState::Failed
                    } else {
                        RecordingState::Uploaded
                    };
                    rec.error = Some(reason);
                }
            }
            // Only the lease holder may write; a replica that lost the lease drops its result
            // and the new holder's stuck recovery transcribes again.
            if let Err(e) = ctx
                .set_cursor(&source_id, &format!("{REC_PREFIX}{rel}"), &json!(rec))
                .await
            {
                tracing::warn!(source_id = %source_id, recording = %rel, error = %e, "transcription result not recorded");
            }
            running.lock().remove(&job);
        });
    }
}

/// The files `accept` takes under `root`, with their modification time (ms) and size.
fn list_files(root: &Path, accept: &dyn Fn(&Path) -> bool) -> Vec<(String, PathBuf, i64, u64)> {
    crate::folder::walk(root, accept)
        .into_iter()
        .filter_map(|(rel, path)| {
            let meta = std::fs::metadata(&path).ok()?;
            Some((rel, path, crate::folder::mtime_ms(&meta), meta.len()))
        })
        .collect()
}

/// One transcription to run: the operator's command and the source's limits.
#[derive(Clone)]
struct Transcription {
    command: TranscriptionCommand,
    timeout_secs: u64,
    max_attempts: u32,
}

/// Runs the operator's command on one recording and returns the transcript it wrote, checked
/// to parse (a command that "succeeds" with garbage is a failure with a reason). No shell: the
/// program gets its arguments as they are, in a cleared environment holding only the
/// variables the command lists.
pub async fn transcribe(
    command: &TranscriptionCommand,
    timeout_secs: u64,
    input: &Path,
) -> Result<String, String> {
    let dir = tempfile::tempdir().map_err(|e| format!("temporary folder: {e}"))?;
    let ext = match command.output_format {
        TranscriptFormat::Vtt => "vtt",
        TranscriptFormat::Srt => "srt",
        TranscriptFormat::Json => "json",
    };
    let output = dir.path().join(format!("transcript.{ext}"));
    let stem = dir.path().join("transcript");
    let (program, args) = command.argv(input, &output, &stem);
    let shown = program.display().to_string();
    let mut cmd = tokio::process::Command::new(&program);
    cmd.args(&args)
        .env_clear()
        .envs(
            command
                .env
                .iter()
                .filter_map(|k| std::env::var_os(k).map(|v| (k.clone(), v))),
        )
        .current_dir(dir.path())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let child = cmd
        .spawn()
        .map_err(|e| format!("cannot run `{shown}`: {e}"))?;
    let out = tokio::time::timeout(Duration::from_secs(timeout_secs), child.wait_with_output())
        .await
        .map_err(|_| format!("no transcript after {timeout_secs}s (killed)"))?
        .map_err(|e| format!("waiting for `{shown}`: {e}"))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let tail: String = stderr
            .trim()
            .chars()
            .rev()
            .take(300)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        return Err(format!("`{shown}` exited with {}: {tail}", out.status));
    }
    let text = tokio::fs::read_to_string(&output)
        .await
        .map_err(|e| format!("the command wrote no readable transcript at {{output}}: {e}"))?;
    parse(command.output_format, &text)
        .map_err(|e| format!("the transcript written is not valid: {e}"))?;
    Ok(text)
}

#[async_trait]
impl LeasedPoller for TranscriptsPoller {
    const KIND: &'static str = "transcripts";

    fn context(&self) -> &PollContext {
        &self.ctx
    }

    async fn poll_source(&self, source: &IndexerSource) -> Result<PollReport, PollError> {
        let cfg = self
            .ctx
            .rooted_config(source, |c: &mut TranscriptsConfig| &mut c.path)?;
        let mut report = self.poll_transcripts(source, &cfg).await?;
        if let Some(r) = &cfg.recordings {
            report.recordings = Some(self.poll_recordings(source, &cfg, r).await?);
        }
        Ok(report.into())
    }
}

/// A recording as last recorded, or as just uploaded when it is new or its file changed
/// (modification time or length).
fn current(known: Option<&Recording>, mtime_ms: i64, len: u64, now: i64) -> Recording {
    let changed = known.is_none_or(|r| r.mtime_ms != mtime_ms || r.len != len);
    match known {
        Some(r) if !changed => r.clone(),
        _ => Recording {
            state: RecordingState::Uploaded,
            since: now,
            mtime_ms,
            len,
            attempts: 0,
            error: None,
            transcript: None,
        },
    }
}

/// How many recordings are in each state, with examples of failures.
fn report(known: &BTreeMap<String, Recording>) -> RecordingsReport {
    let mut by_state: BTreeMap<String, u64> = BTreeMap::new();
    let mut failed = Vec::new();
    for (rel, r) in known {
        let state = serde_json::to_value(r.state)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        *by_state.entry(state).or_default() += 1;
        if r.state == RecordingState::Failed {
            failed.push(format!("{rel}: {}", r.error.as_deref().unwrap_or("failed")));
        }
    }
    RecordingsReport {
        recordings: by_state,
        failed_examples: examples(failed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::SourceConfig;

    #[test]
    fn meeting_ids_drop_the_extension_only() {
        assert_eq!(meeting_id("2026/standup.vtt"), "2026/standup");
        assert_eq!(meeting_id("2026/standup.m4a"), "2026/standup");
        assert_eq!(meeting_id("v1.2/notes"), "v1.2/notes");
    }

    #[test]
    fn recordings_settings_are_checked() {
        let ok: TranscriptsConfig = serde_json::from_value(json!({
            "path": "/srv/meetings",
            "recordings": {"command": "whisper"}
        }))
        .expect("config");
        assert!(ok.validate().is_ok());
        assert_eq!(ok.commands(), vec!["whisper"]);
        let r = ok.recordings.as_ref().expect("recordings");
        assert_eq!(r.stuck_after_ms(), (3 * 3600 + 600) * 1000);
        assert!(r.is_recording(Path::new("/x/a.M4A")));
        let mut bad_name = ok.clone();
        bad_name.recordings.as_mut().expect("r").command = "/bin/sh -c id".into();
        assert!(
            bad_name
                .validate()
                .expect_err("a name")
                .contains("command name")
        );
        // A program and its arguments do not even parse as settings.
        assert!(
            serde_json::from_value::<TranscriptsConfig>(json!({
                "path": "/srv/meetings",
                "recordings": {"command": ["/bin/sh", "-c", "id", "{input}", "{output}"]}
            }))
            .is_err()
        );
    }

    #[tokio::test]
    async fn a_command_that_fails_or_writes_garbage_says_why() {
        let dir = tempfile::tempdir().expect("dir");
        let input = dir.path().join("talk.wav");
        std::fs::write(&input, b"RIFF").expect("write");
        let sh = |script: &str| TranscriptionCommand {
            program: "/bin/sh".into(),
            args: vec![
                "-c".into(),
                script.into(),
                "sh".into(),
                "{input}".into(),
                "{output}".into(),
            ],
            output_format: TranscriptFormat::Vtt,
            env: evident_sources::commands::default_env(),
        };
        let good = sh("printf 'WEBVTT\\n\\n00:00.000 --> 00:01.000\\n<v Ann>Hello\\n' > \"$2\"");
        let text = transcribe(&good, 5, &input).await.expect("transcript");
        assert!(text.contains("<v Ann>Hello"));
        let failing = sh("echo 'model not found' >&2; exit 3");
        let why = transcribe(&failing, 5, &input).await.expect_err("fails");
        assert!(why.contains("model not found"), "{why}");
        let garbage = sh("echo 'not a transcript' > \"$2\"");
        let why = transcribe(&garbage, 5, &input).await.expect_err("garbage");
        assert!(why.contains("not valid"), "{why}");
        let silent = sh("true");
        assert!(
            transcribe(&silent, 5, &input)
                .await
                .expect_err("no output")
                .contains("no readable")
        );
    }

    #[tokio::test]
    async fn a_command_sees_only_the_environment_it_lists() {
        let dir = tempfile::tempdir().expect("dir");
        let input = dir.path().join("talk.wav");
        std::fs::write(&input, b"RIFF").expect("write");
        // The server's own variables (here: one cargo sets for the test process) are not
        // passed on.
        assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
        let cmd = TranscriptionCommand {
            program: "/bin/sh".into(),
            args: vec![
                "-c".into(),
                "printf 'WEBVTT\\n\\n00:00.000 --> 00:01.000\\n<v Env>[%s]\\n' \"$CARGO_MANIFEST_DIR\" > \"$2\"".into(),
                "sh".into(),
                "{input}".into(),
                "{output}".into(),
            ],
            output_format: TranscriptFormat::Vtt,
            env: evident_sources::commands::default_env(),
        };
        let text = transcribe(&cmd, 5, &input).await.expect("transcript");
        assert!(text.contains("<v Env>[]"), "{text}");
    }
}
