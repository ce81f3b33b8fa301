//! Alias registry cases: register, resolve, merge, list, stats.

use super::*;

/// The alias registry: register, resolve, merge, list and stats. Long because it is one
/// registry's story: merges and stats read the aliases registered before them.
pub async fn alias_register_resolve_merge_list_stats(h: &Harness) {
    let a = &h.stores.aliases;
    let unknown = a
        .resolve("c1", &[key("user:nobody")])
        .await
        .expect("resolve");
    assert_eq!(
        unknown,
        vec![key("user:nobody")],
        "unknown resolves to itself"
    );
    a.register("c1", &key("user:jnovak"), &key("user:jan_novak"))
        .await
        .expect("register");
    a.register(
        "c1",
        &key("user:jan_novak_example_com"),
        &key("user:jan_novak"),
    )
    .await
    .expect("register");
    assert_eq!(
        a.resolve("c1", &[key("user:jnovak")])
            .await
            .expect("resolve"),
        vec![key("user:jan_novak")]
    );
    assert_eq!(
        a.resolve("c2", &[key("user:jnovak")])
            .await
            .expect("resolve"),
        vec![key("user:jnovak")],
        "per client"
    );
    let moved = a
        .merge("c1", &key("user:jan_novak"), &key("user:jan"))
        .await
        .expect("merge");
    assert_eq!(moved, 3, "two aliases re-pointed plus the source itself");
    for k in [
        "user:jnovak",
        "user:jan_novak_example_com",
        "user:jan_novak",
    ] {
        assert_eq!(
            a.resolve("c1", &[key(k)]).await.expect("resolve"),
            vec![key("user:jan")],
            "{k}"
        );
    }
    let listed: Vec<String> = a
        .list("c1", &key("user:jan"))
        .await
        .expect("list")
        .into_iter()
        .map(|e| e.alias.to_string())
        .collect();
    assert_eq!(
        listed,
        vec![
            "user:jan_novak",
            "user:jan_novak_example_com",
            "user:jnovak"
        ]
    );
    assert!(
        a.merge("c1", &key("user:jan"), &key("user:jnovak"))
            .await
            .is_err(),
        "cycle refused"
    );
    for _ in 0..3 {
        a.resolve("c1", &[key("user:jnovak")])
            .await
            .expect("resolve");
    }
    let stats = a.stats("c1", 1).await.expect("stats");
    assert_eq!((stats.total_aliases, stats.unique_canonicals), (3, 1));
    assert_eq!(
        stats.top_aliases[0].alias,
        key("user:jnovak"),
        "seen counts were flushed"
    );
}
