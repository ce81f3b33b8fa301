//! Fixture repositories on disk: a folder of `tests/fixtures` committed into a fresh git
//! repository, for tests that index through the real git indexer or a real `evident serve`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// `tests/fixtures/semantic/{name}` committed (one commit on `main`, by Jan) into
/// `dir/{name}`; the repository is named after its folder.
pub fn semantic_repo(name: &str, dir: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/semantic")
        .join(name);
    let work = dir.join(name);
    copy_tree(&src, &work);
    for args in [
        &["init", "-q", "-b", "main"][..],
        &["add", "."],
        &[
            "-c",
            "user.name=Jan",
            "-c",
            "user.email=jan@example.com",
            "commit",
            "-q",
            "-m",
            "Fixture",
        ],
    ] {
        let ok = Command::new("git")
            .args(args)
            .current_dir(&work)
            .status()
            .expect("git");
        assert!(ok.success(), "git {args:?}");
    }
    work
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read fixture") {
        let e = e.expect("entry");
        let target = to.join(e.file_name());
        if e.file_type().expect("type").is_dir() {
            copy_tree(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).expect("copy");
        }
    }
}
