// The dead letter browser: a dead letter queue's messages grouped the way
// failures group (the rejection text, then the body fingerprint; or the
// other way round), each with its reason, source, counts, history and body
// as text; redrive (a dry run first, then paced progress with Cancel),
// delete and purge, each confirmed and reported.

import { q } from "./api.js";
import { h, replace, when, pretty, count, plural, notify, dialog, confirmAction } from "./dom.js";
import { fingerprint } from "./sha256.js";

const MAX_MESSAGES = 10000;
const REDRAW_MS = 2000; // while pages come in
const SHOWN = 20; // messages of a group shown at first, and per "more"
const MAX_QUEUES = 1000; // read to find the queues that feed this one
const REDRIVE_BATCH = 100;
const DELETE_BATCH = 20; // max ids per request (Zaqar's default)

/** What the browser shows of one message, from its include_history representation. */
export function describe(message) {
  const history = message.history || [];
  const last = history[0] || null; // compacted history: most recent first
  const described = history.find((e) => e.description);
  return {
    id: message.id,
    message,
    reason: last ? last.reason : "(no history)",
    from: last ? last.queue : null,
    when: last ? last.last_time : null,
    description: described ? described.description : "",
    claimCount: message.claim_count ?? 0,
    redriveCount: message.redrive_count ?? 0,
    fingerprint: message.fingerprint || fingerprint(message.body),
  };
}

/** What a group of failures is called: the rejection text, or the reason when there is none. */
export const failureOf = (item) => item.description || item.reason;

// The two ways to group, each two levels deep: how failures group (one
// cause, many orders) first by default, or identical bodies first.
export const GROUPINGS = {
  description: { label: "by failure, then body", outer: failureOf, inner: (i) => i.fingerprint },
  fingerprint: { label: "by body, then failure", outer: (i) => i.fingerprint, inner: failureOf },
};

function gather(items, keyOf) {
  const groups = new Map();
  for (const item of items) {
    const key = keyOf(item);
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(item);
  }
  return [...groups.entries()].map(([key, list]) => ({ key, items: list }))
    .sort((a, b) => b.items.length - a.items.length || (a.key < b.key ? -1 : 1));
}

/** Groups, largest first, each with its sub-groups (largest first). */
export function groupMessages(items, mode = "description") {
  const { outer, inner } = GROUPINGS[mode] || GROUPINGS.description;
  return gather(items, outer).map((g) => ({ ...g, sub: gather(g.items, inner) }));
}

function chunks(list, size) {
  const out = [];
  for (let i = 0; i < list.length; i += size) out.push(list.slice(i, i + size));
  return out;
}

function destinations(to) {
  return Object.entries(to || {}).map(([queue, n]) => `${queue} ${n}`).join(", ") || "nowhere";
}

function addTo(total, to) {
  for (const [queue, n] of Object.entries(to || {})) total[queue] = (total[queue] || 0) + n;
}

/** The queues whose `_dead_letter_queue` is `name`, from the project's queue list. */
export async function feedersOf(api, name) {
  const { items } = await api.pages("/v2/queues", { detailed: true, limit: 20 }, "queues", MAX_QUEUES);
  return items.filter((x) => (x.metadata || {})._dead_letter_queue === name).map((x) => x.name).sort();
}

export function queueLinks(names) {
  return names.flatMap((n, i) => [i ? ", " : "", h("a", { href: `#/queue/${encodeURIComponent(n)}`, text: n })]);
}

// Kept while the tab lives: coming back groups the same way.
let grouping = "description";

const pause = (ms, onWake) => new Promise((resolve) => {
  const timer = setTimeout(resolve, Math.max(0, ms));
  onWake(() => { clearTimeout(timer); resolve(); });
});

export function renderDeadLetters(root, { api }, name) {
  let stopped = false;
  let items = [];
  let truncated = false;
  let loading = false;
  const opened = new Set(); // the groups the operator opened: still open after a redraw
  let redriveAvailable = null; // unknown until the probe answers
  const selected = new Set();
  const groupIds = new Map(); // a group checkbox's data-group -> the ids it selects
  const summary = h("p.summary", { id: "summary", "aria-live": "polite" });
  const feeders = h("p.feeders", { id: "feeders" });
  const progress = h("div.progress", { id: "progress", hidden: true });
  // aria-busy: the groups are still being completed page by page (screen
  // readers wait for the whole; so can anything that reads the page).
  const list = h("div", { id: "groups", "aria-busy": "true" }, h("p.empty", { text: "Loading dead letters…" }));
  const note = h("p.note", { id: "redrive-note", hidden: true });
  const btn = (label, kind, onClick, id) => h(`button.${kind}`, { type: "button", id, text: label, on: { click: onClick } });
  const redriveSel = btn("Redrive selected…", "primary", () => redriveIds([...selected], "the selected messages"), "redrive-selected");
  const deleteSel = btn("Delete selected…", "danger", () => deleteIds([...selected], "The selected messages"), "delete-selected");
  const redriveFilter = btn("Redrive by filter…", "plain", onRedriveFilter, "redrive-filter");
  const purge = btn("Purge all…", "danger", onPurge, "purge");
  const selectAll = h("input", { type: "checkbox", id: "select-all", on: { change: () => selectMany(items.map((i) => i.id), selectAll.checked) } });
  const groupBy = h("select", { id: "group-by", on: { change: () => { grouping = groupBy.value; draw(); } } },
    Object.entries(GROUPINGS).map(([value, g]) => h("option", { value, text: g.label, selected: value === grouping })));
  const toolbar = h("div.toolbar", { id: "actions", role: "toolbar", "aria-label": "Actions" },
    h("label.check", {}, selectAll, " select all"), redriveSel, deleteSel, redriveFilter, purge,
    h("span.check.group-by", {}, h("label", { for: "group-by", text: "Group" }), groupBy));
  replace(root,
    h("nav.crumbs", { "aria-label": "Breadcrumb" }, h("a", { href: "#/queues", text: "Queues" }), " / ",
      h("a", { href: `#/queue/${encodeURIComponent(name)}`, text: name }), " / dead letters"),
    h("div.bar", {}, h("h1", { text: `Dead letters in ${name}` })),
    feeders, summary, note, toolbar, progress, list);

  function updateButtons() {
    if (stopped) return; // the operator left: this page is no longer on screen
    const n = selected.size;
    redriveSel.textContent = n ? `Redrive ${n} selected…` : "Redrive selected…";
    deleteSel.textContent = n ? `Delete ${n} selected…` : "Delete selected…";
    redriveSel.disabled = !n || redriveAvailable === false;
    deleteSel.disabled = !n;
    redriveFilter.disabled = !items.length || redriveAvailable === false;
    purge.disabled = !items.length;
    toolbar.hidden = !items.length; // nothing to act on
    selectAll.checked = items.length > 0 && n === items.length;
    for (const box of list.querySelectorAll("input[data-id]")) box.checked = selected.has(box.dataset.id);
    for (const box of list.querySelectorAll("input[data-group]")) {
      const ids = groupIds.get(box.dataset.group) || [];
      const some = n > 0 && ids.some((id) => selected.has(id));
      box.checked = some && ids.every((id) => selected.has(id));
      box.indeterminate = some && !box.checked;
    }
  }

  function selectMany(ids, on) {
    for (const id of ids) (on ? selected.add(id) : selected.delete(id));
    updateButtons();
  }

  function messageView(item) {
    const m = item.message;
    const history = m.history || [];
    return h("li.message", { dataset: { message: item.id } },
      h("label.check", {}, h("input", { type: "checkbox", dataset: { id: item.id }, checked: selected.has(item.id),
        "aria-label": `select message ${item.id}`, on: { change: (e) => selectMany([item.id], e.target.checked) } }),
      h("span.mono", { text: item.id })),
      h("dl.facts", {},
        [["reason", item.reason], ["from", item.from || "–"], ["claim_count", item.claimCount],
         ["redrive_count", item.redriveCount], ["dead lettered", item.when ? when(item.when) : "–"],
         ["last description", item.description || "–"]]
          .map(([k, v]) => h("div", {}, h("dt", { text: k }), h("dd", { dataset: { fact: k } }, v instanceof Node ? v : String(v))))),
      history.length ? h("details.history", {}, h("summary", { text: `history (${history.length})` }),
        h("table", {}, h("thead", {}, h("tr", {}, ["queue", "reason", "count", "first", "last", "description"].map((t) => h("th", { scope: "col", text: t })))),
          h("tbody", {}, history.map((e) => h("tr", {},
            [e.queue, e.reason, e.count].map((v) => h("td", { text: String(v ?? "") })),
            h("td", {}, when(e.first_time)), h("td", {}, when(e.last_time)), h("td", { text: e.description || "" })))))) : null,
      // Collapsed: a page of 20 large bodies is a page nobody scrolls through.
      h("details.body", {}, h("summary", { text: "body" }),
        h("pre.body", { tabindex: "0", "aria-label": "message body", text: pretty(m.body) })));
  }

  /** The first SHOWN messages, and a "more" button for the next SHOWN. */
  function pagedList(groupItems) {
    const ul = h("ul.messages", {});
    let shown = 0;
    const more = h("button.plain.more", { type: "button", on: { click: showMore } });
    function showMore() {
      ul.append(...groupItems.slice(shown, shown + SHOWN).map(messageView));
      shown = Math.min(groupItems.length, shown + SHOWN);
      more.hidden = shown >= groupItems.length;
      more.textContent = `more (${groupItems.length - shown} not shown)`;
    }
    showMore();
    return [ul, more];
  }

  const fingerprintNode = (key) => h("code.fingerprint", { title: key, text: `${key.slice(0, 8)}…` });
  const failureNode = (key) => h("q.description", { text: key });

  function groupBox(ids, label, key) {
    groupIds.set(key, ids);
    return h("input", { type: "checkbox", dataset: { group: key }, "aria-label": `select ${label}`,
      on: { change: (e) => selectMany(ids, e.target.checked) } });
  }

  function subView(group, sub, gi, si) {
    const ids = sub.items.map((i) => i.id);
    const byFailure = grouping === "description";
    const what = byFailure ? [" with body ", fingerprintNode(sub.key)] : [" failing with ", failureNode(sub.key)];
    const label = `${plural(ids.length, "message")}${byFailure ? ` with body ${sub.key}` : ` failing with ${sub.key}`}`;
    return h("div.subgroup", { dataset: { key: sub.key, count: String(ids.length) } },
      h("h3", {}, groupBox(ids, label, `${gi}.${si}`), h("span.count", { text: plural(ids.length, "message") }), ...what),
      ...pagedList(sub.items));
  }

  function groupView(group, index) {
    const ids = group.items.map((i) => i.id);
    const byFailure = grouping === "description";
    const inner = byFailure ? plural(group.sub.length, "body", "bodies") : plural(group.sub.length, "failure");
    const label = `the group: ${plural(ids.length, "message")} ${byFailure ? group.key : `with body ${group.key}`}`;
    const open = index === 0 || opened.has(group.key);
    // The operator's own opening and closing (a click, or Enter, on the
    // summary) is remembered across redraws; the first group's default is not.
    const summaryEl = h("summary", { text: `show ${plural(ids.length, "message")}`,
      on: { click: () => (details.open ? opened.delete(group.key) : opened.add(group.key)) } });
    const details = h("details", { open }, summaryEl);
    // Built when first opened: 500 groups of 20 messages each are not drawn up front.
    const fill = () => {
      if (details.dataset.filled) return;
      details.dataset.filled = "1";
      details.append(...group.sub.map((sub, si) => subView(group, sub, index, si)));
      updateButtons();
    };
    details.addEventListener("toggle", () => details.open && fill());
    if (open) fill();
    return h("section.group", { dataset: { key: group.key, count: String(ids.length), ...(byFailure ? {} : { fingerprint: group.key }) },
      "aria-labelledby": `g${index}` },
      h("header", {}, groupBox(ids, label, String(index)),
        h("h2", { id: `g${index}` }, h("span.count", { text: plural(ids.length, "message") }), " · ",
          byFailure ? failureNode(group.key) : fingerprintNode(group.key), h("span.muted", { text: ` · ${inner}` })),
        h("button.primary", { type: "button", text: "Redrive group…", disabled: redriveAvailable === false,
          on: { click: () => redriveIds(ids, "this group") } }),
        h("button.danger", { type: "button", text: "Delete group…",
          on: { click: () => deleteIds(ids, "This group") } })),
      details);
  }

  function draw() {
    if (stopped) return;
    groupIds.clear();
    if (!items.length) {
      summary.textContent = "";
      replace(list, h("p.empty", { text: "No dead letters: nothing to do." }));
    } else {
      const groups = groupMessages(items, grouping);
      summary.textContent = loading ? `Loading: ${plural(items.length, "message")} so far, in ${plural(groups.length, "group")}…`
        : `${plural(items.length, "message")} in ${plural(groups.length, "group")}` +
          (truncated ? ` (the first ${count(MAX_MESSAGES)}; redrive by filter reaches the rest)` : "");
      replace(list, groups.map(groupView));
    }
    updateButtons();
  }

  function setLoading(now) {
    loading = now;
    list.setAttribute("aria-busy", String(now));
  }

  async function load() {
    setLoading(true);
    // Never drawn yet: the first page draws at once, however young the page
    // (performance.now() counts from the document's start, often under a second).
    let drawn = -Infinity;
    const described = [];
    try {
      // Groups show from the first page on and are redrawn as pages come
      // (at most every REDRAW_MS): the first screen does not wait for 10,000.
      const answer = await api.pages(`${q(name)}/messages`,
        { include_history: true, include_claimed: true, echo: true, limit: 20 }, "messages", MAX_MESSAGES,
        (so_far) => {
          // Each message described (its body hashed) once, as it comes.
          for (let i = described.length; i < so_far.length; i++) described.push(describe(so_far[i]));
          if (stopped || performance.now() - drawn < REDRAW_MS) return;
          items = described.slice();
          draw();
          drawn = performance.now();
        });
      if (stopped) return;
      setLoading(false);
      items = described.slice(0, answer.items.length);
      truncated = answer.truncated;
      const present = new Set(items.map((i) => i.id));
      for (const id of [...selected]) if (!present.has(id)) selected.delete(id);
      draw();
    } catch (err) {
      setLoading(false);
      if (stopped) return;
      replace(list, h("p.error", { role: "alert", text: `Could not read ${name}: ${err.description || err.message}` }));
      updateButtons();
    }
  }

  async function loadFeeders() {
    try {
      const names = await feedersOf(api, name);
      if (stopped) return;
      replace(feeders, names.length ? ["Dead letter queue of ", ...queueLinks(names), "."]
        : [h("span.muted", { text: `No queue names ${name} as its dead letter queue.` })]);
    } catch (err) {
      if (!stopped) feeders.textContent = `Could not list the queues that feed ${name}: ${err.description || err.message}`;
    }
  }

  async function probeRedrive() {
    try {
      await api.request("POST", `${q(name)}/redrive`, { body: { dry_run: true, limit: 1 } });
      redriveAvailable = true;
    } catch (err) {
      if (stopped) return;
      redriveAvailable = !err.missingRoute;
      if (!redriveAvailable) {
        note.hidden = false;
        note.textContent = "Redrive is not available on this server (it has no POST /v2/queues/{queue}/redrive): " +
          "you can still browse, delete and purge.";
        for (const b of list.querySelectorAll("section.group button.primary")) b.disabled = true;
      }
    }
    updateButtons();
  }

  /** One redrive call; ApiError out. */
  const redriveCall = (body) => api.request("POST", `${q(name)}/redrive`, { body }).then((r) => r.data);

  /** Dry run of every call `plan` would make: how many, and where to. */
  async function preview(plan) {
    let matched = 0;
    const to = {};
    const created = new Set();
    for (const body of plan) {
      let marker = null;
      do {
        const answer = await redriveCall({ ...body, ...(marker ? { marker } : {}), dry_run: true });
        matched += answer.matched;
        addTo(to, answer.to);
        for (const queue of answer.created || []) created.add(queue);
        marker = answer.next; // one call scans a bounded window; next continues
      } while (marker);
    }
    return { matched, to, created: [...created] };
  }

  async function runRedrive(plan, label) {
    let dry;
    try {
      dry = await preview(plan);
    } catch (err) {
      if (!err.aborted) notify(`Redrive preview failed: ${err.description || err.message}`, "error");
      return;
    }
    if (stopped) return;
    if (!dry.matched) {
      await dialog("Nothing to redrive", h("p", { text: `No message of ${label} matches.` }), [{ label: "Close", value: "ok" }]);
      return;
    }
    const rateInput = h("input", { id: "redrive-rate", type: "number", min: "1", step: "1", inputmode: "numeric",
      autocomplete: "off", placeholder: "as fast as the server goes", "aria-describedby": "redrive-rate-hint" });
    const answer = await dialog(`Redrive ${plural(dry.matched, "message")}?`, h("div.redrive-form", {},
      h("p", { id: "dry-run", text: `Dry run: ${plural(dry.matched, "message")} of ${label} would move to: ${destinations(dry.to)}.` +
        (dry.created.length ? ` Would create: ${dry.created.join(", ")}.` : "") }),
      h("label", { for: "redrive-rate", text: "Speed (messages per second)" }), rateInput,
      h("p.muted", { id: "redrive-rate-hint", text: "Empty: as fast as the server goes. A redrive can be cancelled between pages." }),
      h("p.muted", { text: "Each keeps its id, body and history; its claim count restarts at 0." })),
    [{ label: "Cancel", value: "no", focus: true }, { label: `Redrive ${dry.matched}`, value: "yes", kind: "primary" }]);
    if (answer !== "yes" || stopped) return;
    const speed = rateInput.value.trim() === "" ? null : Number(rateInput.value);
    if (speed !== null && !(speed > 0)) {
      notify(`Not redriven: the speed must be a number of messages per second above 0, not “${rateInput.value}”.`, "error");
      return;
    }
    await move(plan, dry.matched, speed);
  }

  /** The redrive itself: page by page at `speed` (or as fast as it goes), until done or cancelled. */
  async function move(plan, total, speed) {
    let moved = 0;
    let cancelled = false;
    let wake = () => {};
    const to = {};
    const bar = h("progress", { max: String(total), value: "0" });
    const text = h("span", { id: "redrive-progress", text: `Redriving: 0 of ${total}` });
    const pace = h("span.muted", { id: "redrive-pace", text: speed ? `at most ${speed}/s` : "" });
    const cancel = h("button.danger", { type: "button", id: "redrive-cancel", text: "Cancel redrive",
      on: { click: () => { cancelled = true; cancel.disabled = true; pace.textContent = "stopping after this page…"; wake(); } } });
    replace(progress, text, bar, pace, cancel);
    progress.hidden = false;
    // One redrive at a time: the rest of the page waits until this one ends.
    toolbar.inert = list.inert = true;
    // With a speed, each call moves at most that many: a page takes about a second.
    const page = speed ? Math.max(1, Math.min(REDRIVE_BATCH, Math.floor(speed))) : REDRIVE_BATCH;
    const started = performance.now();
    try {
      outer: for (const body of plan) {
        let marker = null;
        do {
          if (cancelled || stopped) break outer;
          const result = await redriveCall({ ...body, limit: Math.min(body.limit || REDRIVE_BATCH, page), ...(marker ? { marker } : {}) });
          moved += result.moved;
          addTo(to, result.to);
          bar.value = Math.min(moved, total);
          text.textContent = `Redriving: ${moved} of ${total}`;
          marker = result.next;
          // The next page starts when the speed allows it; the rate shown is
          // then the paced one, not the burst of a single call.
          if (speed) await pause(started + (moved / speed) * 1000 - performance.now(), (fn) => { wake = fn; });
          const seconds = (performance.now() - started) / 1000;
          if (!cancelled) pace.textContent = `${Math.round(moved / Math.max(seconds, 0.001))}/s` + (speed ? ` (at most ${speed}/s)` : "");
        } while (marker);
      }
      if (stopped) return;
      if (cancelled) {
        notify(`Redrive cancelled: ${plural(moved, "message")} moved to ${destinations(to)}; ` +
          `the other ${total - moved} stay in ${name}.`, "info");
      } else {
        notify(`Redrove ${plural(moved, "message")} to ${destinations(to)}.`, "ok");
      }
    } catch (err) {
      if (stopped || err.aborted) return;
      notify(`Redrive stopped after ${moved} of ${total}: ${err.description || err.message}`, "error");
    }
    progress.hidden = true;
    toolbar.inert = list.inert = false;
    selected.clear();
    await load();
  }

  function redriveIds(ids, label, filter = {}) {
    if (!ids.length) return;
    return runRedrive(chunks(ids, REDRIVE_BATCH).map((part) => ({ filter: { ...filter, ids: part }, limit: REDRIVE_BATCH })), label);
  }

  async function onRedriveFilter() {
    const distinct = (list) => [...new Set(list)].sort();
    const failures = distinct(items.map(failureOf));
    const prints = groupMessages(items, "fingerprint").map((g) => [g.key, `${g.key.slice(0, 8)}… (${g.items.length}, ${g.sub[0].key})`]);
    const select = (id, options) => h("select", { id }, h("option", { value: "", text: "any" }),
      options.map((o) => (Array.isArray(o) ? h("option", { value: o[0], text: o[1] }) : h("option", { value: o, text: o }))));
    const form = h("form.filter", { on: { submit: (e) => e.preventDefault() } },
      h("label", { for: "flt-failure", text: "Failure (description, or the reason when there is none)" }), select("flt-failure", failures),
      h("label", { for: "flt-fingerprint", text: "Body fingerprint" }), select("flt-fingerprint", prints),
      h("label", { for: "flt-reason", text: "Reason" }), select("flt-reason", distinct(items.map((i) => i.reason))),
      h("label", { for: "flt-from", text: "Dead lettered from" }), select("flt-from", distinct(items.map((i) => i.from).filter(Boolean))),
      h("label", { for: "flt-after", text: "Dead lettered after (UTC)" }),
      h("input", { id: "flt-after", type: "datetime-local", step: "1" }),
      h("label", { for: "flt-before", text: "Dead lettered before (UTC)" }),
      h("input", { id: "flt-before", type: "datetime-local", step: "1" }),
      h("label", { for: "flt-to", text: "Send to (empty: back where each came from)" }),
      h("input", { id: "flt-to", autocomplete: "off" }),
      // Without it a queue that does not exist is refused (404, shown by the preview).
      h("label.check", {}, h("input", { id: "flt-create", type: "checkbox" }), " create the queue if it does not exist"));
    const answer = await dialog("Redrive by filter", form, [
      { label: "Cancel", value: "no" }, { label: "Preview…", value: "yes", kind: "primary", focus: true }]);
    if (answer !== "yes") return;
    const value = (id) => form.querySelector(id).value.trim();
    const filter = {};
    if (value("#flt-reason")) filter.reason = value("#flt-reason");
    if (value("#flt-from")) filter.from = value("#flt-from");
    if (value("#flt-fingerprint")) filter.fingerprint = value("#flt-fingerprint");
    // datetime-local has no zone: the console speaks UTC.
    const seconds = (text) => Date.parse(`${text}Z`) / 1000;
    if (value("#flt-after")) filter.dead_lettered_after = seconds(value("#flt-after"));
    if (value("#flt-before")) filter.dead_lettered_before = seconds(value("#flt-before"));
    const extra = {};
    if (value("#flt-to")) extra.to = value("#flt-to");
    if (form.querySelector("#flt-create").checked) extra.create = true;
    const failure = value("#flt-failure");
    const named = { ...(failure ? { failure } : {}), ...filter };
    const text = (k, v) => (k.startsWith("dead_lettered_") ? `${k.replace(/_/g, " ")} ${new Date(v * 1000).toISOString()}` : `${k} ${v}`);
    const label = `${name} (${Object.keys(named).length ? Object.entries(named).map(([k, v]) => text(k, v)).join(", ") : "every message"})`;
    if (failure) {
      // The API filters on reason, source, fingerprint and time, not on the
      // description: the messages of that failure go by id, with the rest of the filter.
      const ids = items.filter((i) => failureOf(i) === failure).map((i) => i.id);
      await runRedrive(chunks(ids, REDRIVE_BATCH).map((part) => ({ filter: { ...filter, ids: part }, limit: REDRIVE_BATCH, ...extra })), label);
      return;
    }
    await runRedrive([{ filter, limit: REDRIVE_BATCH, ...extra }], label);
  }

  async function deleteIds(ids, label) {
    if (!ids.length) return;
    if (!(await confirmAction(`Delete ${plural(ids.length, "message")}?`,
      `${label} will be deleted from ${name}. This cannot be undone.`, `Delete ${ids.length}`))) return;
    let done = 0;
    try {
      for (const part of chunks(ids, DELETE_BATCH)) {
        await api.request("DELETE", `${q(name)}/messages`, { query: { ids: part.join(",") } });
        done += part.length;
      }
      notify(`Deleted ${plural(done, "message")} from ${name}.`, "ok");
    } catch (err) {
      if (stopped || err.aborted) return;
      notify(`Delete stopped after ${done} of ${ids.length}: ${err.description || err.message}`, "error");
    }
    selected.clear();
    await load();
  }

  async function onPurge() {
    if (!(await confirmAction(`Purge ${name}?`, `All ${plural(items.length, "message")} of ${name} will be deleted. This cannot be undone.`, "Purge"))) return;
    try {
      await api.request("POST", `${q(name)}/purge`, { body: { resource_types: ["messages"] } });
      notify(`Purged ${name}.`, "ok");
    } catch (err) {
      if (stopped || err.aborted) return;
      notify(`Purge failed: ${err.description || err.message}`, "error");
    }
    selected.clear();
    await load();
  }

  loadFeeders();
  load().then(probeRedrive);
  return { stop() { stopped = true; }, refresh: () => { loadFeeders(); return load(); } };
}
