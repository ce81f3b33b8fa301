//! How Go symbols are qualified: by the package's directory, not only its name.
//!
//! Go identifies a package by its import path — its directory — so two packages named `rand`
//! (`math/rand`, `crypto/rand`) or the many `package main` programs of a repository are
//! different packages. The qualifier is:
//! - the file's directory when its last segment is the package name (`math/rand.Intn`, as Go
//!   tools write it);
//! - the directory and the package name otherwise (`cmd/vet/main.main`, an external test
//!   package `math/rand/rand_test.TestX`, `src/store.Store` for `package store` in `src/`);
//! - the package name alone for a file at the repository root.
//!
//! (The one pair this cannot tell apart — `package c` in `a/b` and in `a/b/c` — does not
//! occur in a Go module, where a directory is one package besides its tests.)
//!
//! A **build-constrained** file — a `//go:build` (or `// +build`) line before `package`, or a
//! `_GOOS`, `_GOARCH` or `_GOOS_GOARCH` file-name suffix — declares one variant among files
//! that may declare the same names for other targets (`runtime/defs1_netbsd_386.go` and its
//! siblings each declare `sigset`). Each variant is its own definition, so its qualifier
//! carries the file: `runtime@defs1_netbsd_386.sigset`. A method of such a file whose
//! receiver type is declared elsewhere keeps the plain type as its parent.

/// `GOOS` values (`go tool dist list`, plus the historical ones file names still carry).
const GOOS: &[&str] = &[
    "aix",
    "android",
    "darwin",
    "dragonfly",
    "freebsd",
    "hurd",
    "illumos",
    "ios",
    "js",
    "linux",
    "nacl",
    "netbsd",
    "openbsd",
    "plan9",
    "solaris",
    "wasip1",
    "windows",
    "zos",
];

/// `GOARCH` values.
const GOARCH: &[&str] = &[
    "386",
    "amd64",
    "amd64p32",
    "arm",
    "armbe",
    "arm64",
    "arm64be",
    "loong64",
    "mips",
    "mipsle",
    "mips64",
    "mips64le",
    "mips64p32",
    "mips64p32le",
    "ppc",
    "ppc64",
    "ppc64le",
    "riscv",
    "riscv64",
    "s390",
    "s390x",
    "sparc",
    "sparc64",
    "wasm",
];

/// The qualifier of package `package` declared by the file at `path` (see the module
/// documentation), and the same without the file variant (equal when not constrained).
pub(super) fn qualifier(path: &str, package: &str, src: &str) -> (String, String) {
    let (dir, file) = match path.rsplit_once('/') {
        Some((d, f)) => (d, f),
        None => ("", path),
    };
    let base = if dir.is_empty() {
        package.to_string()
    } else if dir.rsplit('/').next() == Some(package) {
        dir.to_string()
    } else {
        format!("{dir}/{package}")
    };
    let stem = file.strip_suffix(".go").unwrap_or(file);
    if is_constrained(stem, src) {
        (format!("{base}@{stem}"), base)
    } else {
        (base.clone(), base)
    }
}

/// Whether the file is one build variant: a constraint line before `package`, or a target
/// suffix in its name (the `_test` suffix set aside, as the go tool does).
fn is_constrained(stem: &str, src: &str) -> bool {
    let stem = stem.strip_suffix("_test").unwrap_or(stem);
    let parts: Vec<&str> = stem.split('_').collect();
    let n = parts.len();
    let suffix = |i: usize| n > i && i > 0;
    let named = (suffix(n.wrapping_sub(1)) && {
        let last = parts[n - 1];
        GOOS.contains(&last) || GOARCH.contains(&last)
    }) || (suffix(n.wrapping_sub(2))
        && GOOS.contains(&parts[n - 2])
        && GOARCH.contains(&parts[n - 1]));
    named || has_constraint_line(src)
}

/// A `//go:build` or `// +build` line in the header (before the package clause).
fn has_constraint_line(src: &str) -> bool {
    for line in src.lines() {
        let l = line.trim();
        if l.starts_with("package ") {
            return false;
        }
        if l.starts_with("//go:build ") || l.starts_with("// +build ") {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qualifiers_follow_the_directory() {
        let cases = [
            ("math/rand/rand.go", "rand", "", "math/rand"),
            ("crypto/rand/util.go", "rand", "", "crypto/rand"),
            ("cmd/vet/main.go", "main", "", "cmd/vet/main"),
            ("src/sample.go", "store", "", "src/store"),
            ("doc.go", "yaml", "", "yaml"),
            (
                "math/rand/x_test.go",
                "rand_test",
                "",
                "math/rand/rand_test",
            ),
            (
                "runtime/defs1_netbsd_386.go",
                "runtime",
                "",
                "runtime@defs1_netbsd_386",
            ),
            (
                "os/file_unix.go",
                "os",
                "//go:build unix\n\npackage os\n",
                "os@file_unix",
            ),
            (
                "runtime/mkduff.go",
                "main",
                "// +build ignore\npackage main",
                "runtime/main@mkduff",
            ),
            ("os/file_linux_test.go", "os", "", "os@file_linux_test"),
            // Not a target: `_unix` is a constraint tag, not a GOOS suffix.
            ("os/file_unix2.go", "os", "package os\n//go:build x", "os"),
            ("linux.go", "linux", "", "linux"),
        ];
        for (path, package, src, want) in cases {
            assert_eq!(qualifier(path, package, src).0, want, "{path}");
        }
        assert_eq!(
            qualifier("runtime/defs_linux_amd64.go", "runtime", "").1,
            "runtime",
            "the plain qualifier without the variant"
        );
    }
}
