//! Meetings: `transcripts` folders, with recordings one of the operator's commands
//! transcribes (named here, defined in the server's configuration: [`crate::commands`]).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::SourceConfig;

/// The extensions of recordings when a source names none.
pub fn default_audio_extensions() -> Vec<String> {
    [
        "mp3", "wav", "m4a", "ogg", "opus", "flac", "webm", "mp4", "mkv",
    ]
    .map(String::from)
    .to_vec()
}

fn default_timeout() -> u64 {
    3 * 3600
}

fn default_attempts() -> u32 {
    3
}

/// How recordings are transcribed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RecordingsConfig {
    /// The name of a transcription command of the server's configuration
    /// (`[transcription.commands.NAME]`: the program, its arguments, the format it writes).
    /// A program and its arguments are never accepted here.
    pub command: String,
    #[serde(default = "default_audio_extensions")]
    pub extensions: Vec<String>,
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
    /// A recording `transcribing` for longer than this (its process died) is started again.
    /// Default: the timeout plus ten minutes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stuck_after_secs: Option<u64>,
    #[serde(default = "default_attempts")]
    pub max_attempts: u32,
}

/// `kind = "transcripts"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TranscriptsConfig {
    pub path: PathBuf,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recordings: Option<RecordingsConfig>,
}

impl SourceConfig for TranscriptsConfig {
    const KIND: &'static str = "transcripts";
    const FAMILY: &'static str = "meeting";

    fn validate(&self) -> Result<(), String> {
        if !self.path.is_absolute() {
            return Err(format!(
                "`path` must be absolute, not `{}`",
                self.path.display()
            ));
        }
        if let Some(r) = &self.recordings {
            crate::commands::check_name(&r.command)
                .map_err(|e| format!("`recordings.command`: {e}"))?;
            if !(1..=86_400).contains(&r.timeout_secs) {
                return Err("`recordings.timeoutSecs` must be between 1 and 86400".into());
            }
            if r.max_attempts == 0 {
                return Err("`recordings.maxAttempts` must be at least 1".into());
            }
        }
        Ok(())
    }

    fn name(&self) -> String {
        self.path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "meetings".into())
    }

    fn local_paths(&self) -> Vec<PathBuf> {
        vec![self.path.clone()]
    }

    fn commands(&self) -> Vec<String> {
        self.recordings.iter().map(|r| r.command.clone()).collect()
    }
}

impl RecordingsConfig {
    /// How long a recording may stay `transcribing` before it is started again (ms).
    pub fn stuck_after_ms(&self) -> i64 {
        self.stuck_after_secs.unwrap_or(self.timeout_secs + 600) as i64 * 1000
    }

    /// Whether `path` has one of the recordings' extensions (any case).
    pub fn is_recording(&self, path: &std::path::Path) -> bool {
        path.extension().is_some_and(|e| {
            let e = e.to_string_lossy();
            self.extensions.iter().any(|x| x.eq_ignore_ascii_case(&e))
        })
    }
}
