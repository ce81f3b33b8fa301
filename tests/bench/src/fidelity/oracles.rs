//! The independent oracles of the symbol comparison: universal-ctags (every language but
//! Python) and CPython's own `ast` module (Python), each run on the files of a corpus, their
//! answers mapped onto Evident's symbol kinds.
//!
//! Kind mapping (what a user of a code graph expects as a symbol): types (class, interface,
//! struct, enum, trait, named type / alias) and callables (function, method). Not symbols:
//! fields, properties, variables, constants, enum members, parameters, locals, macros,
//! packages, modules and namespaces (Rust `mod`, TypeScript `namespace` are scopes that
//! qualify names), Rust `impl` blocks (their functions are the methods), imports.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// One definition: file (relative to the corpus root), name, Evident kind, 1-based line.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Def {
    pub file: String,
    pub name: String,
    pub kind: &'static str,
    pub line: usize,
}

/// The oracle's name and version, for the report.
pub fn ctags_version() -> Option<String> {
    let out = Command::new("ctags").arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let first = text.lines().next()?.to_string();
    first.contains("Universal Ctags").then_some(first)
}

pub fn python_version() -> Option<String> {
    let out = Command::new("python3").arg("--version").output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The ctags language name of an Evident language.
fn ctags_language(language: &str) -> &'static str {
    match language {
        "rust" => "Rust",
        "go" => "Go",
        "java" => "Java",
        "javascript" => "JavaScript",
        "typescript" => "TypeScript",
        "kotlin" => "Kotlin",
        _ => "",
    }
}

/// A ctags kind as an Evident kind; `None` for what is not a symbol (see the module doc).
///
/// Two kinds are not Evident kinds but comparison classes ([`super::symbols::compare`]):
/// - [`CALLABLE`]: a function or a method. ctags names both `func` in Go and `method` in
///   Kotlin (the scope tells them apart), and its Rust parser loses the `impl` scope of impls
///   with generics or `where` clauses, reporting their methods as scope-less functions.
/// - [`VALUE`]: a JavaScript/TypeScript variable, constant or property, or what ctags calls a
///   class in JavaScript without a `class` keyword on its line (an object literal, ctags
///   treats `const o = {…}` and `module.exports = {…}` as classes). Not a symbol, so never
///   missed; but a function value (`const f = () => …`, `{ m: function () {} }`) is one for
///   Evident, and a stored function or method of that name there matches it.
fn map_ctags_kind(
    language: &str,
    kind: &str,
    scope_kind: Option<&str>,
    line_text: impl FnOnce() -> String,
) -> Option<&'static str> {
    let scoped = scope_kind.is_some_and(|s| !matches!(s, "package" | "module" | "namespace"));
    let js = matches!(language, "javascript" | "typescript");
    Some(match (language, kind) {
        ("javascript", "class") if !line_text().contains("class") => VALUE,
        (_, "class") => "class",
        ("rust", "interface") => "trait",
        (_, "interface" | "annotation") => "interface",
        (_, "struct") => "struct",
        (_, "enum") => "enum",
        (_, "typedef" | "type" | "talias" | "alias" | "typealias") => "type",
        ("kotlin", "object") => "class",
        ("go", "func") if scoped => "method",
        ("go", "func") => "function",
        ("kotlin", "method") => CALLABLE,
        // ctags loses the impl scope (see above): the function then has no scope, or the
        // enclosing module's.
        ("rust", "function") if !scoped => CALLABLE,
        ("go", "methodSpec") => "method",
        // A generator method (`*entries() {}` in a class) is a method; ctags calls every
        // generator a `generator`, which is otherwise a function.
        (_, "generator") if js && scope_kind == Some("class") => "method",
        (_, "function" | "generator") => "function",
        (_, "method" | "getter" | "setter") => "method",
        (_, "constant" | "variable" | "property" | "field") if js => VALUE,
        _ => return None,
    })
}

/// Comparison class: a function or a method (see [`map_ctags_kind`]).
pub const CALLABLE: &str = "callable";
/// Comparison class: a value that a stored function or method may match, never missed.
pub const VALUE: &str = "value";

/// universal-ctags over `files` (relative to `root`): definitions mapped to Evident kinds.
pub fn ctags(language: &str, root: &Path, files: &[String]) -> Result<Vec<Def>, String> {
    let lang = ctags_language(language);
    let list = files.join("\n") + "\n";
    let list_path = root.join(".fidelity-files");
    std::fs::write(&list_path, list).map_err(|e| e.to_string())?;
    let out = Command::new("ctags")
        .current_dir(root)
        .args([
            "--output-format=json",
            "--fields=+nKZ",
            &format!("--languages={lang}"),
            &format!("--language-force={lang}"),
            "-L",
            ".fidelity-files",
            "-f",
            "-",
        ])
        .output()
        .map_err(|e| format!("ctags: {e}"))?;
    let _ = std::fs::remove_file(&list_path);
    if !out.status.success() {
        return Err(format!(
            "ctags failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let mut defs = Vec::new();
    let mut sources: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(tag) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if tag["_type"] != "tag" {
            continue;
        }
        let field = |k: &str| tag[k].as_str();
        let (Some(name), Some(path), Some(kind), Some(line)) = (
            field("name"),
            field("path"),
            field("kind"),
            tag["line"].as_u64(),
        ) else {
            continue;
        };
        // Anonymous things ctags names itself (`AnonymousFunction3c1a0b`, `__anon…`).
        if name.starts_with("__anon") || name.starts_with("Anonymous") {
            continue;
        }
        let line = line as usize;
        let line_text = || {
            let lines = sources
                .entry(path.to_string())
                .or_insert_with(|| read_lines(&root.join(path)));
            lines.get(line.wrapping_sub(1)).cloned().unwrap_or_default()
        };
        if let Some(kind) = map_ctags_kind(language, kind, field("scopeKind"), line_text) {
            defs.push(Def {
                file: path.trim_start_matches("./").to_string(),
                name: name.to_string(),
                kind,
                line,
            });
        }
    }
    Ok(defs)
}

fn read_lines(path: &Path) -> Vec<String> {
    let bytes = std::fs::read(path).unwrap_or_default();
    String::from_utf8_lossy(&bytes)
        .lines()
        .map(str::to_string)
        .collect()
}

/// CPython's `ast`: every `class`, `def` and `async def` at any depth. A `def` whose nearest
/// enclosing class or function is a class is a method; any other a function (nested ones
/// included). Lambdas have no name and are not definitions.
const PYTHON_AST: &str = r#"
import ast, json, sys
root = sys.argv[1]
for rel in sys.stdin.read().splitlines():
    try:
        with open(root + "/" + rel, "rb") as f:
            tree = ast.parse(f.read(), filename=rel)
    except (SyntaxError, ValueError) as e:
        print(json.dumps({"file": rel, "error": str(e)}))
        continue
    def visit(node, in_class):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                print(json.dumps({"file": rel, "name": child.name, "kind": "class", "line": child.lineno}))
                visit(child, True)
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                kind = "method" if in_class else "function"
                print(json.dumps({"file": rel, "name": child.name, "kind": kind, "line": child.lineno}))
                visit(child, False)
            else:
                visit(child, in_class)
    visit(tree, False)
"#;

/// Runs [`PYTHON_AST`] over `files`. Files CPython itself cannot parse are returned apart.
pub fn python_ast(root: &Path, files: &[String]) -> Result<(Vec<Def>, Vec<String>), String> {
    use std::io::Write;
    let mut child = Command::new("python3")
        .args(["-c", PYTHON_AST])
        .arg(root)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("python3: {e}"))?;
    let mut stdin = child.stdin.take().ok_or("python3: no stdin")?;
    let list = files.join("\n");
    let writer = std::thread::spawn(move || stdin.write_all(list.as_bytes()));
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let _ = writer.join();
    if !out.status.success() {
        return Err("python3 ast oracle failed".into());
    }
    let (mut defs, mut unparsable) = (Vec::new(), Vec::new());
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let file = v["file"].as_str().unwrap_or_default().to_string();
        if v.get("error").is_some() {
            unparsable.push(file);
            continue;
        }
        let kind = match v["kind"].as_str() {
            Some("class") => "class",
            Some("method") => "method",
            _ => "function",
        };
        defs.push(Def {
            file,
            name: v["name"].as_str().unwrap_or_default().to_string(),
            kind,
            line: v["line"].as_u64().unwrap_or(0) as usize,
        });
    }
    Ok((defs, unparsable))
}

/// Definitions grouped by file.
pub fn by_file(defs: Vec<Def>) -> BTreeMap<String, Vec<Def>> {
    let mut out: BTreeMap<String, Vec<Def>> = BTreeMap::new();
    for d in defs {
        out.entry(d.file.clone()).or_default().push(d);
    }
    out
}
