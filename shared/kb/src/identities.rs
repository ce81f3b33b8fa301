//! Identities merged across sources (`PreparedSource::merges`): keys that several sources
//! each know part of, joined into one canonical key whatever order the sources arrive in.
//! Mail threads are the case: each message knows its own ancestry (`References`,
//! `In-Reply-To`); the thread is the union of them all, keyed by its root.
//!
//! The state is the alias registry: merging a group resolves each key, picks the canonical
//! that survives ([`survivor`]), registers every other canonical as its alias (which re-points
//! their own aliases: the registry keeps chains flat) and folds the graph nodes written under
//! them into the survivor. Merges are never undone (a re-ingested message only adds).
//!
//! Concurrency: merges of one process run one at a time (a resolve-then-register is not
//! atomic in the registry contract, and two interleaved merges could re-point one key twice
//! and lose a union). After a source's write, [`Kb::settle_merged`] folds again any node the
//! write put under a key that a concurrent merge had meanwhile made an alias, so the graph
//! follows the registry.

use std::collections::HashSet;

use evident_core::NodeKey;

use crate::{Kb, Result};

/// The canonical key a group merges into, given what each of its keys resolves to now
/// (`current[i]` for `group[i]`, most senior key first).
///
/// A canonical that is one of the group's own keys ranks by its place in the group (the
/// senior one wins: a thread's root over the messages below it). A canonical from outside
/// the group was written by a source that knew an ancestor this group does not (a reply
/// naming only its parent, while the parent named the root): it outranks the group's own.
/// Two such outsiders (rare: two shortened ancestries) are ordered by key, so every process
/// decides alike. `None` when all keys already resolve to one.
pub fn survivor<'a>(group: &[NodeKey], current: &'a [NodeKey]) -> Option<&'a NodeKey> {
    let first = current.first()?;
    if current.iter().all(|c| c == first) {
        return None;
    }
    fn rank<'k>(group: &[NodeKey], c: &'k NodeKey) -> (u8, usize, Option<&'k str>) {
        match group.iter().position(|g| g == c) {
            Some(place) => (1, place, None),
            None => (0, 0, Some(c.as_str())),
        }
    }
    current.iter().min_by_key(|c| rank(group, c))
}

impl Kb {
    /// Merges each group into one canonical key (see the module's documentation).
    pub(crate) async fn merge_identities(
        &self,
        client: &str,
        groups: &[Vec<NodeKey>],
    ) -> Result<()> {
        if groups.is_empty() {
            return Ok(());
        }
        let _one_at_a_time = self.merging.lock().await;
        for group in groups {
            let current = self.stores.aliases.resolve(client, group).await?;
            let Some(keep) = survivor(group, &current).cloned() else {
                continue;
            };
            let mut done = HashSet::new();
            for other in current.iter().filter(|c| **c != keep) {
                if !done.insert(other.clone()) {
                    continue;
                }
                self.stores.aliases.register(client, other, &keep).await?;
                self.stores.graph.fold_node(client, other, &keep).await?;
                tracing::debug!(from = %other, into = %keep, "identities merged");
            }
        }
        Ok(())
    }

    /// After a write: folds a node the write put under `written` (the canonical keys it
    /// resolved) into what that key resolves to now, if a merge made it an alias meanwhile.
    pub(crate) async fn settle_merged(&self, client: &str, written: &[NodeKey]) -> Result<()> {
        if written.is_empty() {
            return Ok(());
        }
        let now = self.stores.aliases.resolve(client, written).await?;
        for (was, is) in written.iter().zip(&now) {
            if was != is {
                self.stores.graph.fold_node(client, was, is).await?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(list: &[&str]) -> Vec<NodeKey> {
        list.iter().map(|k| NodeKey::from_canonical(*k)).collect()
    }

    #[test]
    fn the_senior_key_of_the_group_wins_unless_an_outsider_knows_more() {
        let group = keys(&["thread:a", "thread:b", "thread:c"]);
        assert_eq!(
            survivor(&group, &keys(&["thread:a", "thread:a", "thread:a"])),
            None
        );
        assert_eq!(
            survivor(&group, &keys(&["thread:a", "thread:b", "thread:c"])).map(NodeKey::as_str),
            Some("thread:a")
        );
        assert_eq!(
            survivor(&group, &keys(&["thread:b", "thread:b", "thread:c"])).map(NodeKey::as_str),
            Some("thread:b"),
            "the group's root already merged below another of its keys: still the senior"
        );
        assert_eq!(
            survivor(&group, &keys(&["thread:a", "thread:z", "thread:c"])).map(NodeKey::as_str),
            Some("thread:z"),
            "`b` resolves to a root the group never saw"
        );
        assert_eq!(
            survivor(&group, &keys(&["thread:y", "thread:x", "thread:c"])).map(NodeKey::as_str),
            Some("thread:x"),
            "two outsiders: ordered by key"
        );
    }
}
