// The point before which streamed Markdown no longer changes.
import assert from "node:assert/strict";
import { test } from "node:test";

import { stableEnd } from "../../static/tambo/stable.js";

test("text without a finished blank line has no stable part", () => {
  assert.equal(stableEnd(""), 0);
  assert.equal(stableEnd("one paragraph still"), 0);
  assert.equal(stableEnd("one\n"), 0);
});

test("the stable part ends after the last blank line", () => {
  const text = "first\n\nsecond\n\nthird is stre";
  assert.equal(text.slice(0, stableEnd(text)), "first\n\nsecond\n\n");
});

test("a blank line inside an open code fence is not a break", () => {
  const text = "intro\n\n```js\nconst a = 1;\n\nconst b = 2;\n";
  assert.equal(text.slice(0, stableEnd(text)), "intro\n\n");
  const closed = `${text}\`\`\`\n\nafter`;
  assert.equal(closed.slice(0, stableEnd(closed)), closed.slice(0, closed.length - "after".length));
});
