//! The languages Evident parses, recognised by file name.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    Rust,
    Python,
    Java,
    Kotlin,
    Go,
    JavaScript,
    TypeScript,
    /// TypeScript with JSX (`.tsx`); plain JSX is parsed by the JavaScript grammar.
    Tsx,
}

impl Language {
    pub const ALL: [Language; 8] = [
        Language::Rust,
        Language::Python,
        Language::Java,
        Language::Kotlin,
        Language::Go,
        Language::JavaScript,
        Language::TypeScript,
        Language::Tsx,
    ];

    /// The language of a file, from its extension.
    pub fn from_path(path: &str) -> Option<Language> {
        let name = path.rsplit('/').next().unwrap_or(path);
        let ext = name.rsplit_once('.')?.1.to_ascii_lowercase();
        Some(match ext.as_str() {
            "rs" => Language::Rust,
            "py" | "pyi" => Language::Python,
            "java" => Language::Java,
            "kt" | "kts" => Language::Kotlin,
            "go" => Language::Go,
            "js" | "mjs" | "cjs" | "jsx" => Language::JavaScript,
            "ts" | "mts" | "cts" => Language::TypeScript,
            "tsx" => Language::Tsx,
            _ => return None,
        })
    }

    /// A language named in an API request (`"rust"`, `"typescript"`, `"tsx"`, …).
    pub fn from_name(name: &str) -> Option<Language> {
        let lower = name.to_ascii_lowercase();
        Language::ALL
            .into_iter()
            .find(|l| l.name() == lower)
            .or(match lower.as_str() {
                "js" | "jsx" => Some(Language::JavaScript),
                "ts" => Some(Language::TypeScript),
                "py" => Some(Language::Python),
                "rs" => Some(Language::Rust),
                "kt" => Some(Language::Kotlin),
                "golang" => Some(Language::Go),
                _ => None,
            })
    }

    pub fn name(self) -> &'static str {
        match self {
            Language::Rust => "rust",
            Language::Python => "python",
            Language::Java => "java",
            Language::Kotlin => "kotlin",
            Language::Go => "go",
            Language::JavaScript => "javascript",
            Language::TypeScript => "typescript",
            Language::Tsx => "tsx",
        }
    }

    /// How qualified names join their parts (`crate::module::Type::method`, `pkg.Type.method`).
    pub fn separator(self) -> &'static str {
        match self {
            Language::Rust => "::",
            _ => ".",
        }
    }

    pub(crate) fn grammar(self) -> tree_sitter::Language {
        match self {
            Language::Rust => tree_sitter_rust::LANGUAGE.into(),
            Language::Python => tree_sitter_python::LANGUAGE.into(),
            Language::Java => tree_sitter_java::LANGUAGE.into(),
            Language::Kotlin => tree_sitter_kotlin_sg::LANGUAGE.into(),
            Language::Go => tree_sitter_go::LANGUAGE.into(),
            Language::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
            Language::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            Language::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
        }
    }

    /// The module a file's symbols live in when the language does not declare one: Rust
    /// `shared/core/src/refs.rs` → `core::refs`; Python `pkg/sub/__init__.py` → `pkg.sub`;
    /// JavaScript and TypeScript `src/ui/Button.tsx` → `src/ui/Button`. Java, Kotlin and Go
    /// declare their package in the file.
    pub fn module_of(self, path: &str) -> Option<String> {
        let stem = match path.rsplit_once('.') {
            Some((s, _)) if !s.ends_with('/') => s,
            _ => path,
        };
        match self {
            Language::Rust => {
                let parts: Vec<&str> = stem.split('/').collect();
                let src = parts.iter().rposition(|p| *p == "src");
                let (krate, mods) = match src {
                    Some(i) => (i.checked_sub(1).map(|c| parts[c]), &parts[i + 1..]),
                    None => (None, &parts[..]),
                };
                let mut out: Vec<&str> = krate.into_iter().collect();
                let n = mods.len();
                for (i, m) in mods.iter().enumerate() {
                    let last = i + 1 == n;
                    if last && matches!(*m, "lib" | "main" | "mod") {
                        continue;
                    }
                    out.push(m);
                }
                (!out.is_empty()).then(|| out.join("::").replace('-', "_"))
            }
            Language::Python => {
                let mut parts: Vec<&str> = stem.split('/').filter(|p| !p.is_empty()).collect();
                if parts.first() == Some(&"src") {
                    parts.remove(0);
                }
                if parts.last() == Some(&"__init__") {
                    parts.pop();
                }
                (!parts.is_empty()).then(|| parts.join("."))
            }
            Language::JavaScript | Language::TypeScript | Language::Tsx => Some(stem.to_string()),
            Language::Java | Language::Kotlin | Language::Go => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn languages_by_extension() {
        assert_eq!(Language::from_path("a/b/main.rs"), Some(Language::Rust));
        assert_eq!(Language::from_path("App.TSX"), Some(Language::Tsx));
        assert_eq!(Language::from_path("x.jsx"), Some(Language::JavaScript));
        assert_eq!(
            Language::from_path("build.gradle.kts"),
            Some(Language::Kotlin)
        );
        assert_eq!(Language::from_path("README.md"), None);
        assert_eq!(Language::from_path("Makefile"), None);
        assert_eq!(
            Language::from_name("TypeScript"),
            Some(Language::TypeScript)
        );
        assert_eq!(Language::from_name("golang"), Some(Language::Go));
    }

    #[test]
    fn modules_from_paths() {
        assert_eq!(
            Language::Rust
                .module_of("shared/core/src/refs.rs")
                .as_deref(),
            Some("core::refs")
        );
        assert_eq!(Language::Rust.module_of("src/lib.rs"), None);
        assert_eq!(
            Language::Rust
                .module_of("my-crate/src/store/mod.rs")
                .as_deref(),
            Some("my_crate::store")
        );
        assert_eq!(
            Language::Python
                .module_of("src/pkg/sub/__init__.py")
                .as_deref(),
            Some("pkg.sub")
        );
        assert_eq!(
            Language::Tsx.module_of("src/ui/Button.tsx").as_deref(),
            Some("src/ui/Button")
        );
    }
}
