// The page's JSON Patch (RFC 6902) for streamed component props.
import assert from "node:assert/strict";
import { test } from "node:test";

import { applyPatch } from "../../static/tambo/patch.js";

test("add, replace and remove change objects and arrays in place of their paths", () => {
  let doc = {};
  doc = applyPatch(doc, [{ op: "add", path: "/title", value: "Sales" }, { op: "add", path: "/rows", value: [] }]);
  doc = applyPatch(doc, [{ op: "add", path: "/rows/-", value: ["a", 1] }, { op: "add", path: "/rows/0", value: ["z", 0] }]);
  doc = applyPatch(doc, [{ op: "replace", path: "/title", value: "Revenue" }, { op: "remove", path: "/rows/0" }]);
  assert.deepEqual(doc, { title: "Revenue", rows: [["a", 1]] });
});

test("move and copy take the value from `from`; test is ignored", () => {
  const doc = applyPatch({ a: { x: 1 }, b: 2 }, [
    { op: "test", path: "/b", value: 99 },
    { op: "copy", from: "/a", path: "/c" },
    { op: "move", from: "/b", path: "/d" },
  ]);
  assert.deepEqual(doc, { a: { x: 1 }, c: { x: 1 }, d: 2 });
});

test("escaped pointer tokens and a whole-document replace", () => {
  assert.deepEqual(applyPatch({}, [{ op: "add", path: "/a~1b~0c", value: 1 }]), { "a/b~c": 1 });
  assert.deepEqual(applyPatch({ old: true }, [{ op: "replace", path: "", value: { fresh: 1 } }]), { fresh: 1 });
});

test("a path through a missing parent is an error, not a silent no-op", () => {
  assert.throws(() => applyPatch({}, [{ op: "add", path: "/missing/child", value: 1 }]), /path not found/);
});

test("values are copied, so a later patch never changes an earlier operation's value", () => {
  const value = { n: 1 };
  const doc = applyPatch({}, [{ op: "add", path: "/v", value }]);
  value.n = 2;
  assert.equal(doc.v.n, 1);
});
