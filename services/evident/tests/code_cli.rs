//! `evident graph callers|callees|implementations|uses` against a real `evident serve` that
//! follows the Java fixture repository `tests/fixtures/semantic/shop` (`--index-git`): the
//! answers printed one symbol a line, `--json`, `--depth`, an ambiguous name answered for
//! every match and said so, and an unknown symbol refused.

use std::time::{Duration, Instant};

mod support;
use support::Server;

#[test]
fn code_questions_from_the_command_line() {
    let (data, repos, conf) = (tmp(), tmp(), tmp());
    let repo = evident_e2e::fixtures::semantic_repo("shop", repos.path());
    let config = conf.path().join("evident.toml");
    std::fs::write(&config, "[indexers]\npoll_tick_secs = 1\n").expect("config");
    let server = Server::start_with(
        data.path(),
        &[
            "--config".as_ref(),
            config.as_os_str(),
            "--client".as_ref(),
            "c1".as_ref(),
            "--index-git".as_ref(),
            repo.as_os_str(),
        ],
        &[],
    );
    // The server indexes in the background: ask until the answer is there (a real process,
    // no clock to pause), at most two minutes.
    let callers = ["graph", "callers", "Item.price", "--client", "c1"];
    let deadline = Instant::now() + Duration::from_secs(120);
    let out = loop {
        let (ok, out, err) = server.cli(&callers, None);
        if ok && out.contains("shop.model.Book.price()") && out.contains("shop.Cart.price()") {
            break out;
        }
        assert!(
            Instant::now() < deadline,
            "not indexed in time: {out} {err}"
        );
        std::thread::sleep(Duration::from_millis(250));
    };
    assert_eq!(
        out,
        "symbol:shop/shop.model.Item.price()\tmethod\tsrc/shop/model/Item.java:6\n\
         \x20 1\tsymbol:shop/shop.Cart.price()\tmethod\tsrc/shop/Cart.java:10\n\
         \x20 1\tsymbol:shop/shop.model.Book.price()\tmethod\tsrc/shop/model/Book.java:4\n"
    );

    let out = server.ok(
        "graph implementations shop.Priced --depth 2 --client c1",
        &[],
    );
    let keys: Vec<String> = out
        .lines()
        .map(|l| l.split('\t').take(2).collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(
        keys,
        [
            "symbol:shop/shop.Priced interface",
            "  1 symbol:shop/shop.Cart",
            "  1 symbol:shop/shop.model.Item",
            "  2 symbol:shop/shop.model.Book",
        ],
        "{out}"
    );

    let out = server.ok(
        "graph callees symbol:shop/shop.Cart.price() --json --client c1",
        &[],
    );
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(v["relation"], "callees");
    let got: Vec<&str> = v["matches"][0]["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| r["key"].as_str().expect("key"))
        .collect();
    assert_eq!(
        got,
        [
            "symbol:shop/shop.Cart.fee()",
            "symbol:shop/shop.model.Book.price()",
            "symbol:shop/shop.model.Item.price()"
        ]
    );

    let out = server.ok("graph uses Item --client c1", &[]);
    assert!(out.contains("  1\tsymbol:shop/shop.Cart\tclass"), "{out}");

    // `price` names four methods: each is answered, and the answer says it was ambiguous.
    let out = server.ok("graph callers price --client c1", &[]);
    assert!(
        out.starts_with("note: `price` is ambiguous: it names 4 symbols"),
        "{out}"
    );
    assert!(
        out.contains("symbol:shop/shop.Priced.price()\tmethod"),
        "{out}"
    );
    assert!(out.contains("  no callers\n"), "{out}");

    let err = server.refused("graph callers nosuchthing --client c1", &[]);
    assert!(err.contains("not found"), "{err}");
    let err = server.refused("graph callers price --depth 9 --client c1", &[]);
    assert!(err.contains("depth"), "{err}");
}

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}
