//! The per-repository (per-branch) symbol table: every file's symbols and facts, indexed by
//! qualified name, by owner and simple name, by module or package, with resolved base types,
//! the names each file mentions, and each file's current resolution.
//!
//! Incremental by construction: [`SymbolTable::update`] takes changed and deleted files and
//! re-resolves them plus every file that mentions a name they define (before or after the
//! change) — the only files whose resolution can change —, and returns those of the others
//! whose resolution did change: the files to write again.

use std::collections::{BTreeSet, HashMap, HashSet};

use super::resolve::Resolver;
use super::{FileFacts, Resolution};
use crate::lang::Language;
use crate::outline::{Outline, SymbolKind};

/// Threads resolving a large update (a whole branch).
const RESOLVE_THREADS: usize = 2;

/// One symbol of a file, as the table needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SymbolDef {
    pub(crate) qualified_name: String,
    pub(crate) name: String,
    pub(crate) kind: SymbolKind,
    /// The innermost symbol whose span holds this one (by index).
    pub(crate) enclosing: Option<usize>,
}

/// A file as the table holds it: its symbols and facts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileUnit {
    pub(crate) path: String,
    pub(crate) language: Language,
    pub(crate) symbols: Vec<SymbolDef>,
    pub(crate) facts: FileFacts,
}

impl FileUnit {
    pub fn new(path: &str, outline: &Outline, facts: FileFacts) -> FileUnit {
        // Symbols are in source order; a stack of open spans gives each its innermost holder.
        let mut order: Vec<usize> = (0..outline.symbols.len()).collect();
        let s = &outline.symbols;
        order.sort_by_key(|i| (s[*i].byte_start, std::cmp::Reverse(s[*i].byte_end)));
        let mut enclosing = vec![None; s.len()];
        let mut open: Vec<usize> = Vec::new();
        for i in order {
            while let Some(&top) = open.last() {
                if s[top].byte_end >= s[i].byte_end && s[top].byte_start <= s[i].byte_start {
                    break;
                }
                open.pop();
            }
            enclosing[i] = open.last().copied();
            open.push(i);
        }
        FileUnit {
            path: path.to_string(),
            language: outline.language,
            symbols: s
                .iter()
                .zip(enclosing)
                .map(|(s, enclosing)| SymbolDef {
                    qualified_name: s.qualified_name.clone(),
                    name: s.name.clone(),
                    kind: s.kind,
                    enclosing,
                })
                .collect(),
            facts,
        }
    }

    /// The names this file defines or binds at its top (a change to them may change how
    /// other files resolve).
    fn defined_names(&self) -> BTreeSet<String> {
        let mut out: BTreeSet<String> = self.symbols.iter().map(|s| s.name.clone()).collect();
        if let Some(m) = &self.facts.module {
            out.extend(m.split('.').map(str::to_string));
        }
        out.extend(self.facts.imports.iter().filter_map(|i| i.local.clone()));
        out.extend(self.facts.globals.iter().map(|(n, _)| n.clone()));
        out
    }
}

/// The symbol table of one branch of one repository.
#[derive(Debug, Default)]
pub struct SymbolTable {
    pub(crate) files: HashMap<String, FileUnit>,
    /// Qualified name → (file, symbol index) defining it.
    pub(crate) defs: HashMap<String, Vec<(String, usize)>>,
    /// Owner type → simple name → qualified names of its members.
    pub(crate) members: HashMap<String, HashMap<String, Vec<String>>>,
    /// Module (Python) or package (Java) → its files.
    pub(crate) modules: HashMap<String, Vec<String>>,
    /// Every dotted suffix of a module name → modules ending so (`b.c` → `a.b.c`).
    pub(crate) module_suffix: HashMap<String, Vec<String>>,
    /// Type → its resolved bases (qualified names), in declaration order.
    pub(crate) bases: HashMap<String, Vec<String>>,
    /// Name → files mentioning it.
    users: HashMap<String, HashSet<String>>,
    resolutions: HashMap<String, Resolution>,
}

impl SymbolTable {
    pub fn new() -> SymbolTable {
        SymbolTable::default()
    }

    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    pub fn contains(&self, path: &str) -> bool {
        self.files.contains_key(path)
    }

    /// The current resolution of a file (empty for a file the table does not hold).
    pub fn resolution(&self, path: &str) -> Option<&Resolution> {
        self.resolutions.get(path)
    }

    /// Applies changed (`Some`) and deleted (`None`) files, re-resolves what they may affect,
    /// and returns the *other* files whose resolution changed (sorted): the files to write
    /// again. The changed files themselves are always re-resolved.
    pub fn update(&mut self, changes: Vec<(String, Option<FileUnit>)>) -> Vec<String> {
        let mut names: BTreeSet<String> = BTreeSet::new();
        let mut changed: BTreeSet<String> = BTreeSet::new();
        for (path, unit) in changes {
            // The same file again (another batch of one plan at one commit): nothing moves.
            if unit.is_some() && self.files.get(&path) == unit.as_ref() {
                continue;
            }
            if let Some(old) = self.remove(&path) {
                names.extend(old.defined_names());
            }
            if let Some(unit) = unit {
                names.extend(unit.defined_names());
                self.insert(unit);
            }
            changed.insert(path);
        }
        let mut affected: BTreeSet<String> = BTreeSet::new();
        for n in &names {
            if let Some(users) = self.users.get(n) {
                affected.extend(users.iter().cloned());
            }
        }
        affected.retain(|p| !changed.contains(p) && self.files.contains_key(p));
        let redo: Vec<String> = changed
            .iter()
            .filter(|p| self.files.contains_key(*p))
            .chain(affected.iter())
            .cloned()
            .collect();
        // Bases first: member lookups of every file below go through them.
        for p in &redo {
            self.resolve_bases(p);
        }
        let resolved = self.resolve_all(&redo);
        let mut out = Vec::new();
        for (p, r) in redo.into_iter().zip(resolved) {
            let before = self.resolutions.insert(p.clone(), r);
            if affected.contains(&p) && before.as_ref() != self.resolutions.get(&p) {
                out.push(p);
            }
        }
        out
    }

    /// Resolves `paths` against the table as it stands, on up to [`RESOLVE_THREADS`] threads
    /// when there are enough of them (resolution only reads the table).
    fn resolve_all(&self, paths: &[String]) -> Vec<Resolution> {
        let one = |p: &String| Resolver::new(self).resolve_file(&self.files[p]);
        if paths.len() < 64 {
            return paths.iter().map(one).collect();
        }
        let per = paths.len().div_ceil(RESOLVE_THREADS);
        std::thread::scope(|s| {
            let handles: Vec<_> = paths
                .chunks(per)
                .map(|part| s.spawn(move || part.iter().map(one).collect::<Vec<_>>()))
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap_or_default())
                .collect()
        })
    }

    fn insert(&mut self, unit: FileUnit) {
        let path = unit.path.clone();
        for (i, s) in unit.symbols.iter().enumerate() {
            self.defs
                .entry(s.qualified_name.clone())
                .or_default()
                .push((path.clone(), i));
            if let Some(owner) = s.enclosing.map(|e| &unit.symbols[e])
                && owner.kind.is_type()
            {
                self.members
                    .entry(owner.qualified_name.clone())
                    .or_default()
                    .entry(s.name.clone())
                    .or_default()
                    .push(s.qualified_name.clone());
            }
        }
        if let Some(m) = &unit.facts.module {
            self.modules
                .entry(m.clone())
                .or_default()
                .push(path.clone());
            let parts: Vec<&str> = m.split('.').collect();
            for k in 0..parts.len() {
                self.module_suffix
                    .entry(parts[k..].join("."))
                    .or_default()
                    .push(m.clone());
            }
        }
        for n in unit.facts.mentioned() {
            self.users.entry(n).or_default().insert(path.clone());
        }
        self.files.insert(path, unit);
    }

    fn remove(&mut self, path: &str) -> Option<FileUnit> {
        let unit = self.files.remove(path)?;
        self.resolutions.remove(path);
        for (i, s) in unit.symbols.iter().enumerate() {
            if let Some(v) = self.defs.get_mut(&s.qualified_name) {
                v.retain(|(p, j)| !(p == path && *j == i));
                if v.is_empty() {
                    self.defs.remove(&s.qualified_name);
                }
            }
            if s.kind.is_type() {
                self.bases.remove(&s.qualified_name);
            }
            if let Some(owner) = s.enclosing.map(|e| &unit.symbols[e])
                && let Some(m) = self.members.get_mut(&owner.qualified_name)
                && let Some(v) = m.get_mut(&s.name)
            {
                v.retain(|q| *q != s.qualified_name);
                if v.is_empty() {
                    m.remove(&s.name);
                }
            }
        }
        if let Some(m) = &unit.facts.module
            && let Some(v) = self.modules.get_mut(m)
        {
            v.retain(|p| p != path);
            if v.is_empty() {
                self.modules.remove(m);
                let parts: Vec<&str> = m.split('.').collect();
                for k in 0..parts.len() {
                    let key = parts[k..].join(".");
                    if let Some(s) = self.module_suffix.get_mut(&key) {
                        s.retain(|x| x != m);
                        if s.is_empty() {
                            self.module_suffix.remove(&key);
                        }
                    }
                }
            }
        }
        for n in unit.facts.mentioned() {
            if let Some(u) = self.users.get_mut(&n) {
                u.remove(path);
                if u.is_empty() {
                    self.users.remove(&n);
                }
            }
        }
        Some(unit)
    }

    /// The bases of the types `path` declares, resolved in its scope.
    fn resolve_bases(&mut self, path: &str) {
        let found = Resolver::new(self).bases_of(&self.files[path]);
        let unit = &self.files[path];
        for (i, s) in unit.symbols.iter().enumerate() {
            if s.kind.is_type() {
                let b: Vec<String> = found
                    .iter()
                    .filter(|(from, _)| *from == i)
                    .map(|(_, t)| t.clone())
                    .collect();
                self.bases.insert(s.qualified_name.clone(), b);
            }
        }
    }

    /// The kind of the symbol a qualified name designates (its first definition).
    pub(crate) fn kind_of(&self, qname: &str) -> Option<SymbolKind> {
        let (p, i) = self.defs.get(qname)?.first()?;
        Some(self.files.get(p)?.symbols.get(*i)?.kind)
    }
}
