// Where streamed Markdown stops changing: pure, so Node's test runner can check it (markdown.js
// needs the browser's vendored libraries).

const FENCE = /^ {0,3}(`{3,}|~{3,})/;

// The end of the last blank line outside a fenced code block (0: none yet). The last line may still
// be incomplete, so it is not looked at.
export function stableEnd(text) {
  let inFence = false;
  let end = 0;
  let position = 0;
  const lines = text.split("\n");
  for (let i = 0; i < lines.length - 1; i += 1) {
    const line = lines[i];
    position += line.length + 1;
    if (FENCE.test(line)) inFence = !inFence;
    else if (!inFence && line.trim() === "") end = position;
  }
  return end;
}
