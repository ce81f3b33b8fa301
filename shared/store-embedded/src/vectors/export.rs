//! The row map as plain data, saved beside the text index (`crate::restart`) so a restart
//! does not read every chunk row to rebuild it. A child of `vectors` for its private fields.

use std::sync::Arc;

use evident_core::{Scope, Typed};

use super::{Interner, RowMeta, VectorIndex};

/// Each exported value's id in `interner`.
fn remap<T: std::hash::Hash + Eq + Clone>(values: &[T], interner: &mut Interner<T>) -> Vec<u32> {
    values.iter().map(|v| interner.intern(v)).collect()
}

/// The row map as plain data, persisted beside the text index (`text_index::persist`) so a
/// restart does not read every chunk row to rebuild it.
#[derive(Default)]
pub struct RowsExport {
    pub scopes: Vec<Scope>,
    pub kinds: Vec<String>,
    pub typed: Vec<Typed>,
    /// (row id, chunk id, scope, kind, typed labels), by row id; indexes into the lists above.
    pub rows: Vec<(u64, Arc<str>, u32, u32, u32)>,
}

impl VectorIndex {
    /// The live rows with ids ≤ `upto` and the interned values they refer to.
    pub fn export_rows(&self, upto: u64) -> RowsExport {
        let rows: Vec<(u64, Arc<str>, u32, u32, u32)> = {
            let map = self.rows.read();
            map.iter()
                .take_while(|(rid, _)| *rid <= upto)
                .map(|(rid, m)| (rid, m.id.clone(), m.scope, m.kind, m.typed))
                .collect()
        };
        // Interners only grow, so values read after the rows cover every id they use.
        RowsExport {
            scopes: self.scopes.read().values.clone(),
            kinds: self.kinds.read().values.clone(),
            typed: self.typed.read().values.clone(),
            rows,
        }
    }

    /// Adds exported rows to the row map (at open, before any other row is tracked).
    pub fn import_rows(&self, export: RowsExport) {
        let RowsExport {
            scopes,
            kinds,
            typed,
            rows,
        } = export;
        let scopes = remap(&scopes, &mut self.scopes.write());
        let kinds = remap(&kinds, &mut self.kinds.write());
        let typed = remap(&typed, &mut self.typed.write());
        let mut map = self.rows.write();
        for (rid, id, scope, kind, t) in rows {
            // Indexes were checked when the file was read; a row that still refers to nothing
            // is left out rather than given another row's scope.
            let (Some(&scope), Some(&kind), Some(&typed)) = (
                scopes.get(scope as usize),
                kinds.get(kind as usize),
                typed.get(t as usize),
            ) else {
                continue;
            };
            map.insert(
                rid,
                RowMeta {
                    id,
                    scope,
                    kind,
                    typed,
                },
            );
        }
    }
}
