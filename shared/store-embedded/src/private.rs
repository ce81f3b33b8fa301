//! The data directory holds every client's data, the audit log and the token hashes: only its
//! owner may read it. The directory is 0700 and every file the store writes 0600, whatever the
//! process's umask (the binary also sets one at start). A directory or file found wider at
//! open — a data dir from an older build, or one made by hand — is tightened, with a log line.

use std::fs::{File, OpenOptions, Permissions};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use evident_store::{Result, StoreError};

/// Modes the store keeps.
pub const DIR_MODE: u32 = 0o700;
pub const FILE_MODE: u32 = 0o600;

fn io_err(what: &str, path: &Path, e: std::io::Error) -> StoreError {
    StoreError::unavailable(format!("{what} {}: {e}", path.display()))
}

/// Sets `path` to `mode` when it allows more than that (any group or other bit).
fn tighten(path: &Path, mode: u32) -> Result<()> {
    let meta = std::fs::symlink_metadata(path).map_err(|e| io_err("reading", path, e))?;
    if meta.file_type().is_symlink() {
        return Ok(()); // never follow a link out of the data dir
    }
    let current = meta.permissions().mode() & 0o777;
    if current & !mode != 0 {
        std::fs::set_permissions(path, Permissions::from_mode(mode))
            .map_err(|e| io_err("restricting", path, e))?;
        tracing::warn!(
            path = %path.display(),
            from = format!("{current:o}"),
            to = format!("{mode:o}"),
            "data dir permissions tightened: only the owner may read the store"
        );
    }
    Ok(())
}

/// Creates `dir` (0700) or tightens it, and tightens what it holds: files to 0600, folders to
/// 0700 (not recursively: a folder's own contents are the store's to write privately).
pub fn secure_dir(dir: &Path) -> Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(dir)
        .map_err(|e| io_err("creating data dir", dir, e))?;
    tighten(dir, DIR_MODE)?;
    let entries = std::fs::read_dir(dir).map_err(|e| io_err("listing", dir, e))?;
    for entry in entries.flatten() {
        let Ok(ft) = entry.file_type() else { continue };
        if ft.is_dir() {
            tighten(&entry.path(), DIR_MODE)?;
        } else if ft.is_file() {
            tighten(&entry.path(), FILE_MODE)?;
        }
    }
    Ok(())
}

/// Makes sure the database file exists as 0600 before SQLite opens it: SQLite creates its
/// WAL and shared-memory files with the database file's mode.
pub fn create_database(path: &Path) -> Result<()> {
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(FILE_MODE)
        .open(path)
        .map_err(|e| io_err("creating", path, e))?;
    tighten(path, FILE_MODE)
}

/// A new file (truncated if it exists) readable by the owner only.
pub fn create_file(path: &Path) -> std::io::Result<File> {
    let f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(FILE_MODE)
        .open(path)?;
    // `mode` applies only when the file is created: an existing one is narrowed too.
    f.set_permissions(Permissions::from_mode(FILE_MODE))?;
    Ok(f)
}

/// [`std::fs::write`] into a file readable by the owner only.
pub fn write_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    create_file(path)?.write_all(bytes)
}
