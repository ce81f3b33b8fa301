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
//! Concurrency: within a process, merges that touch a common key run one at a time (lock
//! stripes by key: a resolve-then-register is not atomic in the registry contract, and two
//! interleaved merges could re-point one key twice and lose a union). After a source's write, [`Kb::settle_merged`] folds again any node the
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

/// Lock stripes for merges: a merge holds the stripes of every key it reads or re-points.
pub(crate) const MERGE_STRIPES: usize = 64;

fn stripe(key: &NodeKey) -> usize {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    key.hash(&mut h);
    (h.finish() % MERGE_STRIPES as u64) as usize
}

fn stripes_of<'a>(keys: impl Iterator<Item = &'a NodeKey>) -> Vec<usize> {
    keys.map(stripe)
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect()
}

impl Kb {
    /// Merges each group into one canonical key (see the module's documentation).
    ///
    /// Each merge holds the lock stripes of its keys and of what they resolve to (taken in
    /// order, so two merges never wait on each other in a cycle): merges that share a key run
    /// one after the other, the others side by side (their writes share group commits).
    pub(crate) async fn merge_identities(
        &self,
        client: &str,
        groups: &[Vec<NodeKey>],
    ) -> Result<()> {
        for group in groups {
            let mut current = self.stores.aliases.resolve(client, group).await?;
            if survivor(group, &current).is_none() {
                continue;
            }
            let _held = loop {
                let want = stripes_of(group.iter().chain(&current));
                let mut held = Vec::with_capacity(want.len());
                for s in &want {
                    held.push(self.merging[*s].lock().await);
                }
                // What the keys resolve to now, under the lock; if a merge in between moved
                // one to a key whose stripe is not held, take the locks again.
                current = self.stores.aliases.resolve(client, group).await?;
                if stripes_of(group.iter().chain(&current))
                    .iter()
                    .all(|s| want.contains(s))
                {
                    break held;
                }
            };
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
