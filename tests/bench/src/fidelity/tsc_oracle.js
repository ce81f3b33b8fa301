// Second oracle for JavaScript and TypeScript: the TypeScript compiler's own parser.
// Usage: node tsc_oracle.js TYPESCRIPT_LIB ROOT < file list; prints one JSON line per
// definition: {"path", "kind", "name", "line"} with Evident's kinds (docs/benchmarks.md,
// `fidelity`): classes, interfaces, enums, type aliases, functions and methods, including
// function values bound to a name (`const f = () => …`, class fields, members of an object
// literal bound to a name, assignments the compiler binds as declarations, named function
// expressions) and functions declared anywhere inside functions.
const ts = require(process.argv[2]);
const fs = require("fs");
const path = require("path");
const root = process.argv[3];
const files = fs.readFileSync(0, "utf8").split("\n").filter(Boolean);

const isFn = (n) => n && (ts.isArrowFunction(n) || ts.isFunctionExpression(n));
// An object literal whose members Evident reads: bound to a name, assigned, or nested so.
const boundObject = (o) => {
  const p = o.parent;
  return (ts.isVariableDeclaration(p) && p.initializer === o && ts.isIdentifier(p.name))
    || (ts.isBinaryExpression(p) && p.right === o && p.operatorToken.kind === ts.SyntaxKind.EqualsToken)
    || (ts.isPropertyAssignment(p) && p.initializer === o && boundObject(p.parent));
};
// Computed names (`[_close]() {}`) as written.
const nameOf = (n) => !n.name ? null
  : (ts.isIdentifier(n.name) || ts.isPrivateIdentifier(n.name) || ts.isStringLiteral(n.name)
    || ts.isNumericLiteral(n.name)) ? n.name.text
  : ts.isComputedPropertyName(n.name) ? n.name.getText() : null;

for (const rel of files) {
  let text;
  try { text = fs.readFileSync(path.join(root, rel), "utf8"); } catch { continue; }
  const kind = /\.tsx$/.test(rel) ? ts.ScriptKind.TSX : /\.(ts|mts|cts)$/.test(rel) ? ts.ScriptKind.TS
    : ts.ScriptKind.JSX;
  const sf = ts.createSourceFile(rel, text, ts.ScriptTarget.Latest, true, kind);
  const emit = (node, k, name) => {
    if (!name) return;
    const at = node.name ? node.name.getStart(sf) : node.getStart(sf);
    const line = sf.getLineAndCharacterOfPosition(at).line + 1;
    console.log(JSON.stringify({ path: rel, kind: k, name, line }));
  };
  // Overloads: a run of signatures without a body and the implementation that follows them
  // are one callable (Evident folds them into the first), so a declaration counts unless the
  // previous one of its name in the same parent had no body. Kept per parent node: keys made
  // of the parent's position collided (a file's first class starts at 0, like the file, so a
  // top-level `function push` hid the class's `push` method), and two bodied redefinitions
  // (`function a() {}` twice) are two definitions.
  const lastHadBody = new Map();
  const firstOfRun = (n, key) => {
    if (!lastHadBody.has(n.parent)) lastHadBody.set(n.parent, new Map());
    const seen = lastHadBody.get(n.parent);
    const first = !seen.has(key) || seen.get(key);
    seen.set(key, !!n.body);
    return first;
  };
  // Assignments the compiler binds as declarations in JavaScript files
  // (`getAssignmentDeclarationKind`): `Foo.prototype.run = function () {}` is a method of
  // `Foo`, `exports.parse = …` / `module.exports.parse = …` an exported function. Other
  // property writes (`obj.f = function () {}`, `this.f = …`) bind only when the object is an
  // expando container, and are not counted.
  const AK = ts.AssignmentDeclarationKind;
  const assignedKind = (b) => {
    if (!ts.isBinaryExpression(b) || b.operatorToken.kind !== ts.SyntaxKind.EqualsToken
      || !isFn(b.right) || !ts.isPropertyAccessExpression(b.left)) return null;
    const k = ts.getAssignmentDeclarationKind(b);
    return k === AK.PrototypeProperty ? "method" : k === AK.ExportsProperty ? "function" : null;
  };
  // A function expression named by what holds it (a variable, a class field, a member of a
  // bound object, a declaring assignment) is that name's; any other named function expression
  // (`return function iterator() {}`) declares its own name.
  const namedByBinding = (f) => {
    const p = f.parent;
    return (ts.isVariableDeclaration(p) && p.initializer === f && ts.isIdentifier(p.name))
      || (ts.isPropertyDeclaration(p) && p.initializer === f)
      || (ts.isPropertyAssignment(p) && p.initializer === f && boundObject(p.parent))
      || (ts.isBinaryExpression(p) && p.right === f && assignedKind(p) !== null);
  };
  const visit = (n) => {
    if (ts.isClassDeclaration(n) || (ts.isClassExpression(n) && n.name)) emit(n, "class", nameOf(n));
    else if (ts.isInterfaceDeclaration(n)) emit(n, "interface", nameOf(n));
    else if (ts.isEnumDeclaration(n)) emit(n, "enum", nameOf(n));
    else if (ts.isTypeAliasDeclaration(n)) emit(n, "type", nameOf(n));
    else if (ts.isFunctionDeclaration(n)) {
      // Overload signatures and their implementation are one function: the first of a run.
      if (firstOfRun(n, nameOf(n))) emit(n, "function", nameOf(n));
    } else if (ts.isMethodDeclaration(n) || ts.isMethodSignature(n) || ts.isGetAccessor(n)
      || ts.isSetAccessor(n)) {
      if (!ts.isObjectLiteralExpression(n.parent) || boundObject(n.parent)) {
        const key = (n.kind === ts.SyntaxKind.GetAccessor ? "get " : n.kind === ts.SyntaxKind.SetAccessor ? "set " : "")
          + (n.modifiers && n.modifiers.some((m) => m.kind === ts.SyntaxKind.StaticKeyword) ? "static " : "") + nameOf(n);
        if (firstOfRun(n, key)) emit(n, "method", nameOf(n));
      }
    } else if (ts.isConstructorDeclaration(n) && n.body) emit(n, "method", "constructor");
    else if (ts.isPropertyDeclaration(n) && isFn(n.initializer)) emit(n, "method", nameOf(n));
    else if (ts.isPropertyAssignment(n) && isFn(n.initializer) && boundObject(n.parent)) emit(n, "method", nameOf(n));
    else if (ts.isVariableDeclaration(n) && isFn(n.initializer) && ts.isIdentifier(n.name)) emit(n, "function", n.name.text);
    else if (assignedKind(n)) emit(n.left, assignedKind(n), n.left.name.text);
    else if (ts.isFunctionExpression(n) && n.name && !namedByBinding(n)) emit(n, "function", n.name.text);
    ts.forEachChild(n, visit);
  };
  visit(sf);
}
