//! What sources may reach: the egress policy for every network request a source makes
//! (`evident-egress`), and the filesystem roots every local path must lie under
//! (`[sources] roots`). Both are checked when a source is registered and again at every
//! poll and read: a path is canonicalised (symlinks resolved) each time, so a symlink swapped
//! after registration cannot lead outside the roots.
//!
//! Registration entry points that cannot be handed an [`Access`] (the API's) use the one the
//! process installed at startup ([`install`], [`current`]); without one, nothing internal is
//! reachable and no local path is allowed.

use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, RwLock};

use evident_egress::{EgressError, EgressPolicy};
use evident_kb::KbError;

use crate::commands::Commands;
use crate::credentials::CredentialRules;

/// Why access was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AccessError {
    /// A local path outside `[sources] roots` (or no roots configured).
    #[error("{0}")]
    PathNotAllowed(String),
    /// The egress policy refused a URL.
    #[error("{0}")]
    Egress(EgressError),
    /// A source names a command the server's configuration does not define.
    #[error("{0}")]
    UnknownCommand(String),
    /// A source names an environment variable the operator did not allow it
    /// ([`crate::credentials`]).
    #[error("{0}")]
    CredentialNotAllowed(String),
}

impl AccessError {
    /// The API error code.
    pub fn code(&self) -> &'static str {
        match self {
            AccessError::PathNotAllowed(_) => "path_not_allowed",
            AccessError::Egress(_) => "egress_refused",
            AccessError::UnknownCommand(_) => "unknown_command",
            AccessError::CredentialNotAllowed(_) => "credential_not_allowed",
        }
    }
}

impl From<AccessError> for KbError {
    fn from(e: AccessError) -> KbError {
        match e {
            // A name that resolves to nothing is a bad request, not a policy decision.
            AccessError::UnknownCommand(message) => KbError::BadRequest {
                code: "unknown_command",
                message,
            },
            e => KbError::PolicyRefused {
                code: e.code(),
                message: e.to_string(),
            },
        }
    }
}

/// The folders local sources may read (canonical paths).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceRoots {
    roots: Arc<Vec<PathBuf>>,
}

/// `path` with symlinks resolved: the longest existing ancestor canonicalised, the rest (not
/// yet created) appended as written. `..` in that rest is refused (it cannot be resolved).
fn resolve(path: &Path) -> Result<PathBuf, String> {
    if let Ok(p) = std::fs::canonicalize(path) {
        return Ok(p);
    }
    let mut missing = Vec::new();
    let mut cur = path;
    loop {
        match cur.parent() {
            Some(parent) => {
                missing.push(cur.file_name().map(|n| n.to_os_string()));
                if let Ok(base) = std::fs::canonicalize(parent) {
                    let mut out = base;
                    for m in missing.into_iter().rev() {
                        match m {
                            Some(name) => out.push(name),
                            None => return Err(format!("`{}`: `..` in a path", path.display())),
                        }
                    }
                    return Ok(out);
                }
                cur = parent;
            }
            None => return Err(format!("`{}` cannot be resolved", path.display())),
        }
    }
}

impl SourceRoots {
    /// Roots from the configuration (relative ones against the working directory).
    pub fn new<P: AsRef<Path>>(paths: impl IntoIterator<Item = P>) -> SourceRoots {
        SourceRoots::default().with(paths)
    }

    /// These roots and `paths` (what the operator named on the command line).
    pub fn with<P: AsRef<Path>>(&self, paths: impl IntoIterator<Item = P>) -> SourceRoots {
        let mut roots = (*self.roots).clone();
        for p in paths {
            let p = p.as_ref();
            let abs = if p.is_absolute() {
                p.to_path_buf()
            } else {
                std::env::current_dir().map_or_else(|_| p.to_path_buf(), |d| d.join(p))
            };
            let canonical = resolve(&abs).unwrap_or(abs);
            if !roots.contains(&canonical) {
                roots.push(canonical);
            }
        }
        SourceRoots {
            roots: Arc::new(roots),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.roots.is_empty()
    }

    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// The canonical form of `path` if it lies under a root; the refusal says why otherwise.
    pub fn check(&self, path: &Path) -> Result<PathBuf, AccessError> {
        let refuse = |why: String| AccessError::PathNotAllowed(why);
        if !path.is_absolute() {
            return Err(refuse(format!(
                "`{}`: give an absolute path",
                path.display()
            )));
        }
        if path.components().any(|c| matches!(c, Component::ParentDir)) {
            return Err(refuse(format!(
                "`{}`: `..` is not allowed in a source path",
                path.display()
            )));
        }
        if self.roots.is_empty() {
            return Err(refuse(format!(
                "`{}` is not readable by sources: no folders are configured in [sources] roots (list the folders sources may read there)",
                path.display()
            )));
        }
        let canonical = resolve(path).map_err(refuse)?;
        if self.roots.iter().any(|r| canonical.starts_with(r)) {
            Ok(canonical)
        } else {
            let shown = if canonical == path {
                String::new()
            } else {
                format!(" (resolved: `{}`)", canonical.display())
            };
            Err(refuse(format!(
                "`{}`{shown} is outside [sources] roots ({})",
                path.display(),
                self.roots
                    .iter()
                    .map(|r| format!("`{}`", r.display()))
                    .collect::<Vec<_>>()
                    .join(", ")
            )))
        }
    }
}

/// The egress policy, the filesystem roots, the operator's commands and the credentials
/// sources may name, as sources see them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Access {
    pub egress: EgressPolicy,
    pub roots: SourceRoots,
    /// The programs sources may have run, by name (`[transcription.commands]`).
    pub commands: Commands,
    /// The environment variables sources may name (`[sources.credentials]`).
    pub credentials: CredentialRules,
}

impl Access {
    /// No commands, no credentials.
    pub fn new(egress: EgressPolicy, roots: SourceRoots) -> Access {
        Access {
            egress,
            roots,
            commands: Commands::default(),
            credentials: CredentialRules::default(),
        }
    }

    pub fn with_commands(mut self, commands: Commands) -> Access {
        self.commands = commands;
        self
    }

    pub fn with_credentials(mut self, credentials: CredentialRules) -> Access {
        self.credentials = credentials;
        self
    }

    /// Nothing internal reachable, no local path readable.
    pub fn strict() -> Access {
        Access::default()
    }

    /// Tests: loopback fake servers reachable, local paths under `root`, any credential
    /// variable (no commands: a test adds its own).
    pub fn for_tests(root: &Path) -> Access {
        Access {
            egress: EgressPolicy::allow_loopback_for_tests(),
            roots: SourceRoots::new([root]),
            commands: Commands::default(),
            credentials: CredentialRules::any_for_tests(),
        }
    }

    /// Checks a local path (see [`SourceRoots::check`]).
    pub fn path(&self, path: &Path) -> Result<PathBuf, AccessError> {
        self.roots.check(path)
    }

    /// Checks a URL's scheme and IP literal (no resolution).
    pub fn url_literal(&self, url: &str) -> Result<(), AccessError> {
        let u = url::Url::parse(url).map_err(|_| {
            AccessError::Egress(EgressError::NoHost {
                url: url.to_string(),
            })
        })?;
        self.egress.check_literal(&u).map_err(AccessError::Egress)
    }

    /// Checks a URL fully: scheme, IP literal, and the addresses its host resolves to. A name
    /// that does not resolve is not refused here (the fetch reports it; it may resolve later).
    pub async fn url(&self, url: &str) -> Result<(), AccessError> {
        match self.egress.check_url_str(url).await {
            Ok(()) => Ok(()),
            Err(e) if !e.is_refusal() => Ok(()),
            Err(e) => Err(AccessError::Egress(e)),
        }
    }
}

static PROCESS: RwLock<Option<Access>> = RwLock::new(None);

/// Installs the process's access (at startup, from the configuration).
pub fn install(access: Access) {
    let mut guard = PROCESS.write().unwrap_or_else(|p| p.into_inner());
    *guard = Some(access);
}

/// The process's access, strict when none was installed.
pub fn current() -> Access {
    PROCESS
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .clone()
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_must_lie_under_a_root_after_symlinks() {
        let dir = tempfile::tempdir().expect("tmp");
        let root = dir.path().join("allowed");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(root.join("docs")).expect("mkdir");
        std::fs::create_dir_all(&outside).expect("mkdir");
        let roots = SourceRoots::new([&root]);
        assert!(roots.check(&root.join("docs")).is_ok());
        assert!(roots.check(&root.join("not/yet/there.mbox")).is_ok());
        let e = roots.check(&outside).expect_err("outside");
        assert!(e.to_string().contains("outside [sources] roots"), "{e}");
        assert_eq!(e.code(), "path_not_allowed");
        assert!(roots.check(&root.join("../outside")).is_err());
        assert!(roots.check(Path::new("relative")).is_err());
        // A symlink inside the root pointing out of it is refused.
        std::os::unix::fs::symlink(&outside, root.join("link")).expect("symlink");
        let e = roots.check(&root.join("link")).expect_err("escapes");
        assert!(e.to_string().contains("resolved"), "{e}");
        assert!(
            SourceRoots::default()
                .check(&root)
                .expect_err("no roots")
                .to_string()
                .contains("[sources] roots")
        );
    }
}
