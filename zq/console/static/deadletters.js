// The dead letter browser: a dead letter queue's messages grouped by body
// fingerprint and last description (one group, one decision), each with
// its reason, source, counts, history and body as text; redrive (a dry run
// first, then progress), delete and purge, each confirmed and reported.

import { q } from "./api.js";
import { h, replace, since, pretty, plural, notify, dialog, confirmAction } from "./dom.js";
import { fingerprint } from "./sha256.js";

const MAX_MESSAGES = 2000;
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

export function groupMessages(items) {
  const groups = new Map();
  for (const item of items) {
    const key = `${item.fingerprint}\u0000${item.description}`;
    if (!groups.has(key)) groups.set(key, { fingerprint: item.fingerprint, description: item.description, items: [] });
    groups.get(key).items.push(item);
  }
  return [...groups.values()].sort((a, b) => b.items.length - a.items.length);
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

export function renderDeadLetters(root, { api }, name) {
  let stopped = false;
  let items = [];
  let redriveAvailable = null; // unknown until the probe answers
  const selected = new Set();
  const summary = h("p.summary", { id: "summary", "aria-live": "polite" });
  const progress = h("div.progress", { id: "progress", hidden: true });
  const list = h("div", { id: "groups" }, h("p.empty", { text: "Loading dead letters…" }));
  const note = h("p.note", { id: "redrive-note", hidden: true });
  const btn = (label, kind, onClick, id) => h(`button.${kind}`, { type: "button", id, text: label, on: { click: onClick } });
  const redriveSel = btn("Redrive selected…", "primary", () => redriveIds([...selected], "the selected messages"), "redrive-selected");
  const deleteSel = btn("Delete selected…", "danger", () => deleteIds([...selected], "The selected messages"), "delete-selected");
  const redriveFilter = btn("Redrive by filter…", "plain", onRedriveFilter, "redrive-filter");
  const purge = btn("Purge all…", "danger", onPurge, "purge");
  const selectAll = h("input", { type: "checkbox", id: "select-all", on: { change: () => selectMany(items.map((i) => i.id), selectAll.checked) } });
  replace(root,
    h("nav.crumbs", { "aria-label": "Breadcrumb" }, h("a", { href: "#/queues", text: "Queues" }), " / ",
      h("a", { href: `#/queue/${encodeURIComponent(name)}`, text: name }), " / dead letters"),
    h("div.bar", {}, h("h1", { text: `Dead letters in ${name}` })),
    summary, note,
    h("div.toolbar", { id: "actions", role: "toolbar", "aria-label": "Actions" },
      h("label.check", {}, selectAll, " select all"), redriveSel, deleteSel, redriveFilter, purge),
    progress, list);

  function updateButtons() {
    const n = selected.size;
    redriveSel.textContent = n ? `Redrive ${n} selected…` : "Redrive selected…";
    deleteSel.textContent = n ? `Delete ${n} selected…` : "Delete selected…";
    redriveSel.disabled = !n || redriveAvailable === false;
    deleteSel.disabled = !n;
    redriveFilter.disabled = !items.length || redriveAvailable === false;
    purge.disabled = !items.length;
    root.querySelector("#actions").hidden = !items.length; // nothing to act on
    selectAll.checked = items.length > 0 && n === items.length;
    for (const box of list.querySelectorAll("input[data-id]")) box.checked = selected.has(box.dataset.id);
    for (const box of list.querySelectorAll("input[data-group]")) {
      const ids = box.dataset.group.split(",");
      box.checked = ids.every((id) => selected.has(id));
      box.indeterminate = !box.checked && ids.some((id) => selected.has(id));
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
      h("label.check", {}, h("input", { type: "checkbox", dataset: { id: item.id },
        "aria-label": `select message ${item.id}`, on: { change: (e) => selectMany([item.id], e.target.checked) } }),
      h("span.mono", { text: item.id })),
      h("dl.facts", {},
        [["reason", item.reason], ["from", item.from || "–"], ["claim_count", item.claimCount],
         ["redrive_count", item.redriveCount], ["dead lettered", item.when ? `${since(item.when)} (${item.when})` : "–"],
         ["last description", item.description || "–"]]
          .map(([k, v]) => h("div", {}, h("dt", { text: k }), h("dd", { dataset: { fact: k }, text: String(v) })))),
      history.length ? h("details.history", {}, h("summary", { text: `history (${history.length})` }),
        h("table", {}, h("thead", {}, h("tr", {}, ["queue", "reason", "count", "first", "last", "description"].map((t) => h("th", { scope: "col", text: t })))),
          h("tbody", {}, history.map((e) => h("tr", {}, [e.queue, e.reason, e.count, e.first_time, e.last_time, e.description || ""]
            .map((v) => h("td", { text: String(v ?? "") }))))))) : null,
      h("pre.body", { tabindex: "0", "aria-label": "message body", text: pretty(m.body) }));
  }

  function groupView(group, index) {
    const ids = group.items.map((i) => i.id);
    const share = ids.length === 1 ? " shares fingerprint " : " share fingerprint ";
    const title = `${plural(ids.length, "message")}${share}${group.fingerprint.slice(0, 8)}… / ` +
      (group.description ? `description ${group.description}` : "no description");
    const box = h("input", { type: "checkbox", dataset: { group: ids.join(",") }, "aria-label": `select the group: ${title}`,
      on: { change: (e) => selectMany(ids, e.target.checked) } });
    return h("section.group", { dataset: { fingerprint: group.fingerprint, count: String(ids.length) }, "aria-labelledby": `g${index}` },
      h("header", {}, box,
        h("h2", { id: `g${index}` }, h("span.count", { text: plural(ids.length, "message") }), share,
          h("code", { title: group.fingerprint, text: `${group.fingerprint.slice(0, 8)}…` }), " / ",
          group.description ? h("q.description", { text: group.description }) : h("span.muted", { text: "no description" })),
        h("button.primary", { type: "button", text: "Redrive group…", disabled: redriveAvailable === false,
          on: { click: () => redriveIds(ids, "this group") } }),
        h("button.danger", { type: "button", text: "Delete group…",
          on: { click: () => deleteIds(ids, "This group") } })),
      h("details", { open: index === 0 }, h("summary", { text: `show ${plural(ids.length, "message")}` }),
        h("ul.messages", {}, group.items.slice(0, 200).map(messageView)),
        ids.length > 200 ? h("p.muted", { text: `The first 200 of ${ids.length} are shown; actions take the whole group.` }) : null));
  }

  async function load() {
    try {
      const { items: messages, truncated } = await api.pages(`${q(name)}/messages`,
        { include_history: true, include_claimed: true, echo: true, limit: 20 }, "messages", MAX_MESSAGES);
      if (stopped) return;
      items = messages.map(describe);
      for (const id of [...selected]) if (!items.some((i) => i.id === id)) selected.delete(id);
      const groups = groupMessages(items);
      if (!items.length) {
        summary.textContent = "";
        replace(list, h("p.empty", { text: "No dead letters: nothing to do." }));
      } else {
        summary.textContent = `${plural(items.length, "message")} in ${plural(groups.length, "group")}` +
          (truncated ? ` (the first ${MAX_MESSAGES}; redrive by filter reaches the rest)` : "");
        replace(list, groups.map(groupView));
      }
    } catch (err) {
      replace(list, h("p.error", { role: "alert", text: `Could not read ${name}: ${err.description || err.message}` }));
    }
    updateButtons();
  }

  async function probeRedrive() {
    try {
      await api.request("POST", `${q(name)}/redrive`, { body: { dry_run: true, limit: 1 } });
      redriveAvailable = true;
    } catch (err) {
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
      notify(`Redrive preview failed: ${err.description || err.message}`, "error");
      return;
    }
    if (!dry.matched) {
      await dialog("Nothing to redrive", h("p", { text: `No message of ${label} matches.` }), [{ label: "Close", value: "ok" }]);
      return;
    }
    const answer = await dialog(`Redrive ${plural(dry.matched, "message")}?`, h("div", {},
      h("p", { id: "dry-run", text: `Dry run: ${plural(dry.matched, "message")} of ${label} would move to: ${destinations(dry.to)}.` +
        (dry.created.length ? ` Would create: ${dry.created.join(", ")}.` : "") }),
      h("p.muted", { text: "Each keeps its id, body and history; its claim count restarts at 0." })),
    [{ label: "Cancel", value: "no", focus: true }, { label: `Redrive ${dry.matched}`, value: "yes", kind: "primary" }]);
    if (answer !== "yes") return;
    let moved = 0;
    const to = {};
    const bar = h("progress", { max: String(dry.matched), value: "0" });
    const text = h("span", { text: `Redriving: 0 of ${dry.matched}` });
    replace(progress, text, bar);
    progress.hidden = false;
    try {
      for (const body of plan) {
        let marker = null;
        do {
          const result = await redriveCall({ ...body, ...(marker ? { marker } : {}) });
          moved += result.moved;
          addTo(to, result.to);
          bar.value = Math.min(moved, dry.matched);
          text.textContent = `Redriving: ${moved} of ${dry.matched}`;
          marker = result.next;
        } while (marker);
      }
      notify(`Redrove ${plural(moved, "message")} to ${destinations(to)}.`, "ok");
    } catch (err) {
      notify(`Redrive stopped after ${moved} of ${dry.matched}: ${err.description || err.message}`, "error");
    }
    progress.hidden = true;
    selected.clear();
    await load();
  }

  function redriveIds(ids, label) {
    if (!ids.length) return;
    return runRedrive(chunks(ids, REDRIVE_BATCH).map((part) => ({ filter: { ids: part }, limit: REDRIVE_BATCH })), label);
  }

  async function onRedriveFilter() {
    const reasons = [...new Set(items.map((i) => i.reason))];
    const sources = [...new Set(items.map((i) => i.from).filter(Boolean))];
    const form = h("form.filter", { on: { submit: (e) => e.preventDefault() } },
      h("label", { for: "flt-reason", text: "Reason" }),
      h("select", { id: "flt-reason" }, h("option", { value: "", text: "any" }), reasons.map((r) => h("option", { value: r, text: r }))),
      h("label", { for: "flt-from", text: "Dead lettered from" }),
      h("select", { id: "flt-from" }, h("option", { value: "", text: "any" }), sources.map((s) => h("option", { value: s, text: s }))),
      h("label", { for: "flt-to", text: "Send to (empty: back where each came from)" }),
      h("input", { id: "flt-to", autocomplete: "off" }),
      // Without it a queue that does not exist is refused (404, shown by the preview).
      h("label.check", {}, h("input", { id: "flt-create", type: "checkbox" }), " create the queue if it does not exist"));
    const answer = await dialog("Redrive by filter", form, [
      { label: "Cancel", value: "no" }, { label: "Preview…", value: "yes", kind: "primary", focus: true }]);
    if (answer !== "yes") return;
    const filter = {};
    if (form.querySelector("#flt-reason").value) filter.reason = form.querySelector("#flt-reason").value;
    if (form.querySelector("#flt-from").value) filter.from = form.querySelector("#flt-from").value;
    const body = { filter, limit: REDRIVE_BATCH };
    const to = form.querySelector("#flt-to").value.trim();
    if (to) body.to = to;
    if (form.querySelector("#flt-create").checked) body.create = true;
    const label = Object.keys(filter).length ? Object.entries(filter).map(([k, v]) => `${k} ${v}`).join(", ") : "every message";
    await runRedrive([body], `${name} (${label})`);
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
      notify(`Purge failed: ${err.description || err.message}`, "error");
    }
    selected.clear();
    await load();
  }

  load().then(probeRedrive);
  return { stop() { stopped = true; }, refresh: load };
}
