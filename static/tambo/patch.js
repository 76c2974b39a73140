// RFC 6902 JSON Patch, enough to follow streamed component props (the server's diff may use
// add, remove, replace, move, copy and test).

export function applyPatch(document, operations) {
  let root = document;
  for (const raw of operations) {
    let op = raw;
    if (op.op === "test") continue;
    if (op.op === "move" || op.op === "copy") {
      const value = clone(walk(root, parsePointer(op.from)));
      if (op.op === "move") root = applyPatch(root, [{ op: "remove", path: op.from }]);
      op = { op: "add", path: op.path, value };
    }
    const path = parsePointer(op.path);
    if (path.length === 0) {
      if (op.op === "remove") root = {};
      else root = clone(op.value);
      continue;
    }
    const parent = walk(root, path.slice(0, -1));
    const key = path[path.length - 1];
    if (parent === undefined || parent === null || typeof parent !== "object") {
      throw new Error(`JSON Patch path not found: ${op.path}`);
    }
    if (op.op === "add" || op.op === "replace") {
      if (Array.isArray(parent)) {
        const index = key === "-" ? parent.length : Number(key);
        if (op.op === "add") parent.splice(index, 0, clone(op.value));
        else parent[index] = clone(op.value);
      } else {
        parent[key] = clone(op.value);
      }
    } else if (op.op === "remove") {
      if (Array.isArray(parent)) parent.splice(Number(key), 1);
      else delete parent[key];
    } else {
      throw new Error(`Unsupported JSON Patch operation: ${op.op}`);
    }
  }
  return root;
}

function parsePointer(pointer) {
  if (pointer === "") return [];
  return pointer.slice(1).split("/").map((part) => part.replace(/~1/g, "/").replace(/~0/g, "~"));
}

function walk(value, path) {
  for (const key of path) {
    if (value === null || typeof value !== "object") return undefined;
    value = Array.isArray(value) ? value[Number(key)] : value[key];
  }
  return value;
}

function clone(value) {
  return value === undefined ? undefined : JSON.parse(JSON.stringify(value));
}
