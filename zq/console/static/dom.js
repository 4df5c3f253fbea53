// Building the page: every piece of server data goes in as text (textContent,
// attribute values), never as HTML, so a body holding <script> stays text.

/** h("tag.class", {attr: value, on: {click: fn}}, ...children) */
export function h(spec, attrs = {}, ...children) {
  const [tag, ...classes] = spec.split(".");
  const el = document.createElement(tag);
  if (classes.length) el.className = classes.join(" ");
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "on") {
      for (const [event, fn] of Object.entries(value)) el.addEventListener(event, fn);
    } else if (key === "text") {
      el.textContent = String(value);
    } else if (key === "dataset") {
      Object.assign(el.dataset, value);
    } else if (key in el && typeof value !== "string") {
      el[key] = value;
    } else {
      el.setAttribute(key, value === true ? "" : String(value));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** SVG element (the chart): attributes only, no markup. */
export function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [key, value] of Object.entries(attrs)) el.setAttribute(key, String(value));
  append(el, children);
  return el;
}

/** A duration as people say it: "18 s", "4 min", "3 h", "2 d". */
export function ago(seconds) {
  if (seconds === null || seconds === undefined) return "–";
  const s = Math.max(0, Math.round(seconds));
  if (s < 90) return `${s} s`;
  if (s < 5400) return `${Math.round(s / 60)} min`;
  if (s < 172800) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86400)} d`;
}

/** Milliseconds since the epoch from an ISO 8601 string or POSIX seconds; NaN if neither. */
export function toMillis(value) {
  if (typeof value === "number") return value * 1000;
  return value ? Date.parse(value) : NaN;
}

/** "2026-11-28 10:42:07 UTC": the absolute time, shown on hover. */
export function utc(millis) {
  return `${new Date(millis).toISOString().slice(0, 19).replace("T", " ")} UTC`;
}

/**
 * The one way the console shows a time: relative ("18 s ago"), the absolute
 * UTC time on hover and in `datetime`. `value`: ISO 8601 or POSIX seconds.
 */
export function when(value) {
  const millis = toMillis(value);
  if (Number.isNaN(millis)) return h("span.muted", { text: value ? String(value) : "–" });
  return h("time", { datetime: new Date(millis).toISOString(), title: utc(millis),
    text: `${ago((Date.now() - millis) / 1000)} ago` });
}

/** A time `age` seconds before now, shown as `when` does. */
export function aged(age) {
  return age === null || age === undefined ? h("span.muted", { text: "–" }) : when((Date.now() / 1000) - age);
}

/** A body as readable text: JSON pretty-printed, a string as itself. */
export function pretty(body) {
  if (typeof body === "string") return body;
  return JSON.stringify(body, null, 2);
}

// "10,000": a count an operator reads at a glance, whatever the browser's locale.
export function count(n) {
  return n.toLocaleString("en-US");
}

export function plural(n, one, many = one + "s") {
  return `${count(n)} ${n === 1 ? one : many}`;
}

let statusTimer = null;
/** A short notice in the live region (screen readers hear it too); it replaces the last one. */
export function notify(text, kind = "info") {
  const el = document.getElementById("status");
  el.className = `status ${kind}`;
  el.textContent = text;
  clearTimeout(statusTimer);
  if (kind !== "error") statusTimer = setTimeout(clearNotice, 8000);
}

/** No notice: a new outcome is on its way, or the page it spoke of is gone. */
export function clearNotice() {
  clearTimeout(statusTimer);
  const el = document.getElementById("status");
  el.textContent = "";
  el.className = "status";
}

/**
 * A modal dialog (never window.confirm: the page must stay scriptable and
 * themable). Resolves with the button's value, or null on Escape / cancel.
 */
export function dialog(title, body, buttons) {
  return new Promise((resolve) => {
    const root = document.getElementById("modal-root");
    const previous = document.activeElement;
    const close = (value) => {
      root.replaceChildren();
      document.removeEventListener("keydown", onKey, true);
      if (previous && previous.focus) previous.focus();
      resolve(value);
    };
    const onKey = (event) => {
      if (event.key === "Escape") { event.preventDefault(); close(null); }
      if (event.key === "Tab") trap(event, box);
    };
    const actions = buttons.map((b) => h(`button.${b.kind || "plain"}`, {
      type: "button", text: b.label, dataset: { value: b.value }, on: { click: () => close(b.value) },
    }));
    const box = h("div.dialog", { role: "dialog", "aria-modal": "true", "aria-labelledby": "dialog-title" },
      h("h2", { id: "dialog-title", text: title }), body, h("div.actions", {}, actions));
    root.replaceChildren(h("div.backdrop", {}, box));
    document.addEventListener("keydown", onKey, true);
    (actions.find((_, i) => buttons[i].focus) || actions[0]).focus();
  });
}

function trap(event, box) {
  const focusable = [...box.querySelectorAll("button, input, select, textarea, a[href]")];
  if (!focusable.length) return;
  const first = focusable[0], last = focusable[focusable.length - 1];
  if (event.shiftKey && document.activeElement === first) { event.preventDefault(); last.focus(); }
  else if (!event.shiftKey && document.activeElement === last) { event.preventDefault(); first.focus(); }
}

/** "Are you sure" with a cancel that has the focus: Enter never destroys by accident. */
export async function confirmAction(title, text, label, kind = "danger") {
  const answer = await dialog(title, h("p", { text }), [
    { label: "Cancel", value: "no", focus: true },
    { label, value: "yes", kind },
  ]);
  return answer === "yes";
}
