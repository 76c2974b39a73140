// The composer's images: pasted (Ctrl+V of a screenshot), dropped on the composer, or picked with the
// attach button. Each shows as a thumbnail with a remove button until the message is sent; `take()`
// hands them over as the content parts `@tambo-ai/react`'s input sends
// ({type:"resource", resource:{name, mimeType, blob}}) and empties the tray.

// What the server passes to models as images (docs/images-and-voice.md).
export const IMAGE_TYPES = ["image/png", "image/jpeg", "image/gif", "image/webp"];
// Run bodies may be 10 MB; base64 makes files a third larger, and the text needs some room too.
const MAX_TOTAL_BYTES = 7_000_000;

const el = (tag, className, text) => {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
};

function readAsDataUrl(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result);
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });
}

export function attachmentTray(root, { onNotice }) {
  const tray = root.querySelector("[data-role=attachments]");
  const picker = root.querySelector("[data-role=file-input]");
  const attach = root.querySelector("[data-role=attach]");
  const form = root.querySelector("[data-role=composer]");
  const input = root.querySelector("[data-role=input]");
  let items = []; // { name, mimeType, dataUrl, size }

  const draw = () => {
    tray.replaceChildren();
    tray.hidden = items.length === 0;
    items.forEach((item, index) => {
      const li = el("li", "attachment");
      const img = el("img");
      img.src = item.dataUrl;
      img.alt = item.name;
      const remove = el("button", "attachment-remove", "×");
      remove.type = "button";
      remove.setAttribute("aria-label", `Remove ${item.name}`);
      remove.addEventListener("click", () => {
        items.splice(index, 1);
        draw();
        input.focus();
      });
      li.append(img, remove);
      tray.append(li);
    });
  };

  const add = async (files) => {
    for (const file of files) {
      if (!IMAGE_TYPES.includes(file.type)) {
        onNotice(`${file.name || "That file"} is not a PNG, JPEG, GIF or WebP image.`);
        continue;
      }
      const total = items.reduce((sum, item) => sum + item.size, 0) + file.size;
      if (total > MAX_TOTAL_BYTES) {
        onNotice(`${file.name || "That image"} does not fit: one message takes about 7 MB of images.`);
        continue;
      }
      const dataUrl = await readAsDataUrl(file);
      items.push({ name: file.name || `pasted-${items.length + 1}.${file.type.split("/")[1]}`, mimeType: file.type, dataUrl, size: file.size });
    }
    draw();
  };

  input.addEventListener("paste", (event) => {
    const files = [...(event.clipboardData?.files || [])];
    if (!files.length) return; // plain text pastes as usual
    event.preventDefault();
    add(files);
  });
  form.addEventListener("dragover", (event) => {
    if ([...(event.dataTransfer?.types || [])].includes("Files")) {
      event.preventDefault();
      form.classList.add("is-dropping");
    }
  });
  form.addEventListener("dragleave", () => form.classList.remove("is-dropping"));
  form.addEventListener("drop", (event) => {
    form.classList.remove("is-dropping");
    const files = [...(event.dataTransfer?.files || [])];
    if (!files.length) return;
    event.preventDefault();
    add(files);
  });
  attach.addEventListener("click", () => picker.click());
  picker.addEventListener("change", () => {
    add([...picker.files]);
    picker.value = "";
  });

  return {
    get count() {
      return items.length;
    },
    // The content parts, and thumbnails for the transcript; the tray is empty afterwards.
    take() {
      const taken = items.map((item) => ({
        part: { type: "resource", resource: { name: item.name, mimeType: item.mimeType, blob: item.dataUrl.split(",", 2)[1] } },
        image: { name: item.name, src: item.dataUrl },
      }));
      items = [];
      draw();
      return taken;
    },
  };
}
