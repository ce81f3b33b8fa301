//! Programs the server runs on a source's behalf. They are configuration, never request
//! input: the operator defines each one by name in the server's configuration
//! (`[transcription.commands.NAME]`), and a source names one (`recordings.command = "NAME"`).
//! The named commands are the allow-list: no program outside them is ever started, whatever a
//! source's settings say, and no role (operator included) can pass a program or its arguments
//! through the API, MCP, the console or a `[[sources.…]]` entry.
//!
//! A command runs without a shell (the program and its arguments are passed as they are), in
//! a cleared environment (only the variables it lists are passed on: the server's own
//! credentials are not), with the recording's path as one whole argument.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use evident_extract::transcript::TranscriptFormat;
use serde::{Deserialize, Serialize};

use crate::access::AccessError;

/// Replaced in a command's arguments: the recording, the transcript to write, and the
/// transcript's path without its extension (for programs that add their own).
pub const PLACEHOLDERS: [&str; 3] = ["{input}", "{output}", "{output_stem}"];

/// Characters that an argument holding a placeholder may not contain: a recording's file name
/// spliced into a shell script (`sh -c "whisper {input}"`) could inject shell syntax.
const SHELL_SYNTAX: &[char] = &[
    ';', '|', '&', '$', '`', '\'', '"', '<', '>', '(', ')', '\\', '*', '?', '~', '!', '#', '\n',
];

fn default_output_format() -> TranscriptFormat {
    TranscriptFormat::Vtt
}

/// The environment a command gets when it lists none.
pub fn default_env() -> Vec<String> {
    ["PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR"]
        .map(String::from)
        .to_vec()
}

/// `[transcription.commands.NAME]`: one program that turns a recording into a transcript.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TranscriptionCommand {
    /// The program: an absolute path (no search of `PATH`).
    pub program: PathBuf,
    /// Its arguments; `{input}` must appear (the recording) and `{output}` or
    /// `{output_stem}` (where to write).
    #[serde(default)]
    pub args: Vec<String>,
    /// The format it writes.
    #[serde(default = "default_output_format")]
    pub output_format: TranscriptFormat,
    /// The environment variables passed on to it (their values from the server's own
    /// environment); every other variable is cleared.
    #[serde(default = "default_env")]
    pub env: Vec<String>,
}

/// `[transcription]`: the commands sources may name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TranscriptionSettings {
    #[serde(default)]
    pub commands: BTreeMap<String, TranscriptionCommand>,
}

/// A command's name: what a source's settings hold.
pub fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "command name `{}`: use 1..=64 of a-z, 0-9, '-', '_'",
            name.escape_debug()
        ))
    }
}

fn valid_env_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

impl TranscriptionCommand {
    /// Checks the definition (at configuration load).
    pub fn validate(&self, name: &str) -> Result<(), String> {
        check_name(name)?;
        let at = |why: String| format!("transcription.commands.{name}: {why}");
        let program = self.program.to_string_lossy();
        if !self.program.is_absolute() || program.chars().any(char::is_control) {
            return Err(at(format!(
                "`program` must be an absolute path, not `{}`",
                program.escape_debug()
            )));
        }
        if PLACEHOLDERS.iter().any(|p| program.contains(p)) {
            return Err(at("`program` cannot hold a placeholder".into()));
        }
        let has = |p: &[&str]| self.args.iter().any(|a| p.iter().any(|x| a.contains(x)));
        if !has(&["{input}"]) {
            return Err(at("`args` must pass `{input}` to the program".into()));
        }
        if !has(&["{output}", "{output_stem}"]) {
            return Err(at(
                "`args` must say where to write: `{output}` or `{output_stem}`".into(),
            ));
        }
        for a in &self.args {
            if a.chars().any(|c| c.is_control() && c != '\n') {
                return Err(at("`args` cannot hold control characters".into()));
            }
            if PLACEHOLDERS.iter().any(|p| a.contains(p))
                && a.contains(|c: char| c.is_whitespace() || SHELL_SYNTAX.contains(&c))
            {
                return Err(at(format!(
                    "argument `{}`: a placeholder must be a whole argument or `--flag={{input}}`, never inside a shell script (a file name could inject commands)",
                    a.escape_debug()
                )));
            }
        }
        if let Some(bad) = self.env.iter().find(|e| !valid_env_name(e)) {
            return Err(at(format!(
                "`env` lists variable names, not `{}`",
                bad.escape_debug()
            )));
        }
        Ok(())
    }

    /// The program and its arguments for one recording.
    pub fn argv(&self, input: &Path, output: &Path, stem: &Path) -> (PathBuf, Vec<String>) {
        let fill = |arg: &str| {
            arg.replace("{input}", &input.to_string_lossy())
                .replace("{output_stem}", &stem.to_string_lossy())
                .replace("{output}", &output.to_string_lossy())
        };
        (
            self.program.clone(),
            self.args.iter().map(|a| fill(a)).collect(),
        )
    }
}

/// The commands of the server's configuration, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Commands {
    transcription: Arc<BTreeMap<String, TranscriptionCommand>>,
}

impl Commands {
    /// The configured commands, each checked.
    pub fn new(settings: &TranscriptionSettings) -> Result<Commands, String> {
        for (name, c) in &settings.commands {
            c.validate(name)?;
        }
        Ok(Commands {
            transcription: Arc::new(settings.commands.clone()),
        })
    }

    /// The transcription command `name`, if the operator defined it.
    pub fn transcription(&self, name: &str) -> Result<&TranscriptionCommand, AccessError> {
        self.transcription.get(name).ok_or_else(|| {
            AccessError::UnknownCommand(format!(
                "no transcription command `{}` is configured on the server (the operator defines them in [transcription.commands.NAME]; configured: {})",
                name.escape_debug(),
                if self.transcription.is_empty() {
                    "none".to_string()
                } else {
                    self.transcription
                        .keys()
                        .map(|k| format!("`{k}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            ))
        })
    }

    pub fn is_empty(&self) -> bool {
        self.transcription.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(program: &str, args: &[&str]) -> TranscriptionCommand {
        TranscriptionCommand {
            program: program.into(),
            args: args.iter().map(|s| s.to_string()).collect(),
            output_format: TranscriptFormat::Vtt,
            env: default_env(),
        }
    }

    #[test]
    fn definitions_are_checked() {
        let ok = cmd(
            "/usr/bin/whisper-cli",
            &["-f", "{input}", "-of", "{output_stem}"],
        );
        assert!(ok.validate("whisper").is_ok());
        assert!(
            cmd("/usr/bin/w", &["--in={input}", "--out={output}"])
                .validate("w")
                .is_ok()
        );
        let bad = |c: TranscriptionCommand, name: &str, why: &str| {
            let e = c.validate(name).expect_err("refused");
            assert!(e.contains(why), "{e}");
        };
        bad(ok.clone(), "Whisper!", "command name");
        bad(
            cmd("whisper-cli", &["{input}", "{output}"]),
            "w",
            "absolute",
        );
        bad(
            cmd("/bin/{input}", &["{input}", "{output}"]),
            "w",
            "placeholder",
        );
        bad(cmd("/bin/w", &["{output}"]), "w", "{input}");
        bad(cmd("/bin/w", &["{input}"]), "w", "where to write");
        bad(
            cmd("/bin/sh", &["-c", "whisper {input} > {output}"]),
            "w",
            "shell script",
        );
        let mut env = ok.clone();
        env.env = vec!["A=B".into()];
        bad(env, "w", "`env`");
    }

    #[test]
    fn only_configured_names_resolve() {
        let mut settings = TranscriptionSettings::default();
        settings.commands.insert(
            "whisper".into(),
            cmd("/usr/bin/whisper-cli", &["{input}", "{output}"]),
        );
        let commands = Commands::new(&settings).expect("valid");
        assert!(commands.transcription("whisper").is_ok());
        let e = commands.transcription("sh").expect_err("unknown");
        assert_eq!(e.code(), "unknown_command");
        assert!(e.to_string().contains("`whisper`"), "{e}");
        let (program, args) = commands.transcription("whisper").expect("whisper").argv(
            Path::new("/in/a b.wav"),
            Path::new("/o/t.vtt"),
            Path::new("/o/t"),
        );
        assert_eq!(program, PathBuf::from("/usr/bin/whisper-cli"));
        assert_eq!(args, vec!["/in/a b.wav", "/o/t.vtt"]);
    }
}
