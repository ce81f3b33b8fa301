//! JavaScript/TypeScript declarations in the positions the `fidelity` suite found missing
//! against the TypeScript compiler's parser (issue 13): inside statements and expressions of
//! every kind, object literals bound to no name, computed keys, class fields holding
//! functions, prototype and `exports` assignments, named function expressions.

use super::outline;
use crate::lang::Language;

/// `kind qualifiedName line` of every symbol (parent after `<` when there is one).
fn symbols(lang: Language, path: &str, src: &str) -> Vec<String> {
    let o = outline(lang, path, src).expect("outline");
    assert_eq!(o.error_nodes, 0, "{path} parses cleanly");
    o.symbols
        .iter()
        .map(|s| {
            let parent = s
                .parent
                .as_deref()
                .map_or(String::new(), |p| format!(" <{p}"));
            format!(
                "{} {} {}{parent}",
                s.kind.as_str(),
                s.qualified_name,
                s.line_start
            )
        })
        .collect()
}

#[test]
fn declarations_inside_statements_are_symbols() {
    let src = "\
function outer() {
  if (a) { function inIf() {} } else { const inElse = () => {}; }
  for (const x of xs) { const inFor = function () {}; }
  while (b) { class InWhile {} }
  try { function inTry() {} } catch (e) { function inCatch() {} } finally { function inFinally() {} }
  switch (c) { case 1: { function inCase() {} } default: function inDefault() {} }
  label: { function inLabel() {} }
  return new Promise((resolve) => { const inReturn = () => resolve(); });
}
if (global.X) { Cache = class WeakCache { get(k) {} } }
";
    assert_eq!(
        symbols(Language::JavaScript, "s.js", src),
        vec![
            "function s.outer 1",
            "function s.outer.inIf 2",
            "function s.outer.inElse 2",
            "function s.outer.inFor 3",
            "class s.outer.InWhile 4",
            "function s.outer.inTry 5",
            "function s.outer.inCatch 5",
            "function s.outer.inFinally 5",
            "function s.outer.inCase 6",
            "function s.outer.inDefault 6",
            "function s.outer.inLabel 7",
            "function s.outer.inReturn 8",
            "class s.WeakCache 10",
            "method s.WeakCache.get 10 <s.WeakCache",
        ]
    );
}

#[test]
fn members_of_an_object_bound_to_no_name_are_values_but_what_they_declare_is_not() {
    let src = "\
register({
  run() { function helper() {} },
  stop: function () {},
  Builder: class Builder { build() {} },
  nested: { deep() {} },
});
function factory() {
  return { Minimatch: class Minimatch { static defaults() {} } };
}
";
    assert_eq!(
        symbols(Language::JavaScript, "o.js", src),
        vec![
            "function o.helper 2",
            "class o.Builder 4",
            "method o.Builder.build 4 <o.Builder",
            "function o.factory 7",
            "class o.factory.Minimatch 8",
            "method o.factory.Minimatch.defaults 8 <o.factory.Minimatch",
        ]
    );
}

#[test]
fn computed_keys_and_function_valued_fields_hold_their_functions() {
    let src = "\
const matchers = {
  [TYPE_URL]: (m) => (value) => value,
  plain: 1,
  wrapped: memo(() => { function key() {} }),
};
class Agent {
  onData = (chunk) => { const parse = () => chunk; };
  cache = build(function () { function inner() {} });
}
";
    assert_eq!(
        symbols(Language::JavaScript, "k.js", src),
        vec![
            "method k.matchers.[TYPE_URL] 2",
            "function k.matchers.key 4",
            "class k.Agent 6",
            "method k.Agent.onData 7 <k.Agent",
            "function k.Agent.onData.parse 7",
            "function k.Agent.inner 8",
        ]
    );
}

#[test]
fn prototype_and_exports_assignments_and_named_function_expressions_are_symbols() {
    let src = "\
function Negotiator(request) {}
Negotiator.prototype.charset = function charset(available) {};
Negotiator.prototype.preferred = Negotiator.prototype.charset;
class Codec {}
Codec.prototype.encoder = function () {};
exports.parse = function (s) {};
module.exports.format = (v) => String(v);
module.exports = function licenseValid(x) {};
obj.handler = function () {};
function distance() {
  return function iterator() {};
}
";
    assert_eq!(
        symbols(Language::JavaScript, "p.js", src),
        vec![
            "function p.Negotiator 1",
            "method p.Negotiator.charset 2",
            "class p.Codec 4",
            "method p.Codec.encoder 5 <p.Codec",
            "function p.parse 6",
            "function p.format 7",
            "function p.licenseValid 8",
            "function p.distance 10",
            "function p.distance.iterator 11",
        ]
    );
}

#[test]
fn typescript_functions_in_a_returned_callback_are_symbols() {
    let src = "\
export function ajax<T>(config: AjaxConfig): Observable<T> {
  return new Observable<T>((destination) => {
    const addErrorEvent = (type: string, error: unknown) => {};
    if (config.progress) {
      function report(e: ProgressEvent): void {}
    }
  });
}
export const timer = { schedule(work: () => void): number { return 0; } };
";
    assert_eq!(
        symbols(Language::TypeScript, "src/ajax.ts", src),
        vec![
            "function src/ajax.ajax 1",
            "function src/ajax.ajax.addErrorEvent 3",
            "function src/ajax.ajax.report 5",
            "method src/ajax.timer.schedule 9",
        ]
    );
}
