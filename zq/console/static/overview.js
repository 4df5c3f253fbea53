// Queues overview: every queue of the project with its counts, consumers,
// dead letter policy and dead letter depth, the most troubled first.

import { q } from "./api.js";
import { h, replace, aged, when, plural } from "./dom.js";
import { consumersOf } from "./consumers.js";
import { queueLinks } from "./deadletters.js";
import { sparkline } from "./chart.js";

const REFRESH_MS = 5000;
const MAX_QUEUES = 500;
// Dead letter depths seen at the previous refresh, to tell which are growing.
const previousDepth = new Map();
let filterText = "";

async function mapLimit(items, limit, fn) {
  const results = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i], i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

let ratesMissing = false; // an older zq, or metrics off: asked once, not per queue

async function ratesOf(api, name) {
  if (ratesMissing) return null;
  try {
    return (await api.get(`${q(name)}/rates`)).data;
  } catch (err) {
    if (err.missingRoute) ratesMissing = true;
    return null;
  }
}

async function statsOf(api, name) {
  try {
    const { data } = await api.get(`${q(name)}/stats`);
    // zq's `waiting` (claims waiting for a message) and `breaker` (a queue
    // whose breaker is on) sit beside Zaqar's counts.
    const extra = {};
    if (typeof data.waiting === "number") extra.waiting = data.waiting;
    if (data.breaker) extra.breaker = data.breaker;
    return { ...data.messages, ...extra };
  } catch (err) {
    return { error: err.description || err.message };
  }
}

/** Everything the table shows, one row per queue. */
export async function loadOverview(api) {
  const { items, truncated } = await api.pages("/v2/queues", { detailed: true, limit: 20 }, "queues", MAX_QUEUES);
  const stats = new Map();
  const names = items.map((x) => x.name);
  const dlqNames = new Set(items.map((x) => (x.metadata || {})._dead_letter_queue).filter(Boolean));
  const wanted = [...new Set([...names, ...dlqNames])];
  const results = await mapLimit(wanted, 6, (name) => statsOf(api, name));
  wanted.forEach((name, i) => stats.set(name, results[i]));
  const consumers = await mapLimit(names, 6, (name) => consumersOf(api, name));
  const rates = await mapLimit(names, 6, (name) => ratesOf(api, name));
  const rows = items.map((queue, i) => {
    const metadata = queue.metadata || {};
    const s = stats.get(queue.name) || {};
    const dlq = metadata._dead_letter_queue || null;
    const isDlq = dlqNames.has(queue.name);
    const feeders = items.filter((x) => (x.metadata || {})._dead_letter_queue === queue.name).map((x) => x.name).sort();
    const deadDepth = dlq ? (stats.get(dlq) || {}).total ?? null : isDlq ? s.total ?? null : null;
    const depthKey = dlq || queue.name;
    const before = previousDepth.get(depthKey);
    const growth = deadDepth !== null && before !== undefined ? deadDepth - before : 0;
    const c = consumers[i];
    return {
      name: queue.name, metadata, stats: s, dlq, isDlq, feeders, deadDepth, growth,
      consumers: c.available ? c.list : null, rates: rates[i],
      suspected: c.available ? c.list.filter((x) => x.suspected).length : 0,
    };
  });
  for (const row of rows) if (row.deadDepth !== null) previousDepth.set(row.dlq || row.name, row.deadDepth);
  rows.sort(byTrouble);
  return { rows, truncated };
}

/** A breaker not closed first, then growing dead letters, the most dead letters, suspected consumers, the oldest message. */
export function byTrouble(a, b) {
  return tripped(b) - tripped(a) || (b.growth > 0) - (a.growth > 0) || b.growth - a.growth ||
    (b.deadDepth || 0) - (a.deadDepth || 0) || b.suspected - a.suspected ||
    oldest(b) - oldest(a) || a.name.localeCompare(b.name);
}

const oldest = (row) => (row.stats.oldest ? row.stats.oldest.age : 0);
const tripped = (row) => Number(Boolean(row.stats.breaker && row.stats.breaker.state !== "closed"));

function policyCell(row) {
  const cell = h("td.policy", { text: policyText(row) });
  // Where a dead letter queue's messages come from, each a link.
  if (row.feeders.length) cell.append(h("span.fed", {}, "dead letters of ", queueLinks(row.feeders)));
  return cell;
}

function policyText(row) {
  const m = row.metadata;
  if (!m._dead_letter_queue) return row.isDlq ? "" : "none";
  const after = m._max_claim_count ? `after ${plural(m._max_claim_count, "claim")}` : "no claim limit";
  return `→ ${m._dead_letter_queue}, ${after}${m._dead_letter_expired ? ", and expired" : ""}`;
}

function consumersCell(row) {
  if (row.consumers === null) return h("td.num.muted", { text: "n/a", title: "consumers are not available on this server" });
  const cell = h("td.num", { text: String(row.consumers.length) });
  if (row.suspected) cell.append(" ", h("span.badge.warn", { text: `${row.suspected} suspected` }));
  return cell;
}

function deadCell(row) {
  if (row.deadDepth === null) return h("td.num.muted", { text: "–" });
  const target = row.dlq || row.name;
  const cell = h("td.num", {}, h("a", { href: `#/dlq/${encodeURIComponent(target)}`, text: String(row.deadDepth),
    "aria-label": `${row.deadDepth} dead letters in ${target}` }));
  if (row.growth > 0) cell.append(" ", h("span.badge.bad", { text: `+${row.growth}`, title: "since the last refresh" }));
  return cell;
}

function waitingCell(row) {
  const n = row.stats.waiting;
  return h("td.num", { dataset: { col: "waiting" }, text: String(n ?? 0),
    title: `claims waiting for a message on ${row.name} (long poll)` });
}

function tableRow(row, waits) {
  const s = row.stats;
  const trouble = row.growth > 0 ? "grow" : row.deadDepth ? "dead" : row.suspected ? "warn" : "";
  const nameCell = h("th", { scope: "row" }, h("a", { href: `#/queue/${encodeURIComponent(row.name)}`, text: row.name }));
  if (row.isDlq) nameCell.append(" ", h("a.badge", { href: `#/dlq/${encodeURIComponent(row.name)}`, text: "dead letters" }));
  if (tripped(row)) {
    const b = s.breaker;
    nameCell.append(" ", h(`span.badge.${b.state === "open" ? "bad" : "warn"}`, { dataset: { breaker: b.state },
      text: `breaker ${b.state}`, title: b.description ? `failures shared: ${b.description}` : "its breaker is not closed" }));
  }
  return h(`tr${trouble ? "." + trouble : ""}`, { dataset: { queue: row.name } },
    nameCell,
    ...(s.error ? [h("td.error", { colspan: 5, text: s.error })] : [
      h("td.num", { dataset: { col: "free" }, text: String(s.free ?? 0) }),
      h("td.num", { dataset: { col: "claimed" }, text: String(s.claimed ?? 0) }),
      h("td.num", { dataset: { col: "delayed" }, text: String(s.delayed ?? 0) }),
      h("td.num", { dataset: { col: "total" }, text: String(s.total ?? 0) }),
      h("td.num", { dataset: { col: "oldest" } }, aged(s.oldest ? s.oldest.age : null)),
    ]),
    h("td.rates", { dataset: { col: "rates" } }, row.rates ? sparkline(row.rates) : h("span.muted", { text: "–" })),
    consumersCell(row),
    waits ? waitingCell(row) : null,
    policyCell(row),
    deadCell(row));
}

export function renderOverview(root, { api }) {
  let timer = null;
  let stopped = false;
  let data = null;
  const updated = h("span.muted", { id: "updated" });
  const auto = h("input", { type: "checkbox", id: "auto", checked: true,
    on: { change: () => (auto.checked ? schedule() : clearTimeout(timer)) } });
  const filter = h("input", { id: "filter", type: "search", value: filterText, placeholder: "filter by name  ( / )",
    "aria-label": "Filter queues by name", on: { input: () => { filterText = filter.value; draw(); } } });
  const body = h("div", { id: "overview" }, h("p.empty", { text: "Loading queues…" }));
  replace(root, h("div.bar", {}, h("h1", { text: "Queues" }), filter,
    h("label.check", {}, auto, " refresh every 5 s"), updated), body);

  function draw() {
    if (!data) return;
    const shown = data.rows.filter((r) => r.name.toLowerCase().includes(filterText.trim().toLowerCase()));
    if (!data.rows.length) {
      replace(body, h("p.empty", { text: "No queues in this project yet: posting a message to a queue creates it." }));
      return;
    }
    if (!shown.length) {
      replace(body, h("p.empty", { text: `No queue name contains “${filterText}”.` }));
      return;
    }
    // A "Waiting" column (claims waiting for a message, long poll) when the
    // server's stats count them.
    const waits = data.rows.some((r) => typeof r.stats.waiting === "number");
    const head = ["Queue", "Free", "Claimed", "Delayed", "Total", "Oldest", "Rates (10 min)", "Consumers",
      ...(waits ? ["Waiting"] : []), "Dead letter policy", "Dead letters"];
    replace(body, h("div.scroll", {}, h("table.queues", { "aria-describedby": "updated" },
      h("caption", { text: `${plural(shown.length, "queue")}, most troubled first` }),
      h("thead", {}, h("tr", {}, head.map((t) => h("th", { scope: "col", text: t })))),
      h("tbody", {}, shown.map((row) => tableRow(row, waits))))),
    data.truncated ? h("p.muted", { text: `Showing the first ${MAX_QUEUES} queues.` }) : null);
  }

  async function refresh() {
    clearTimeout(timer);
    try {
      data = await loadOverview(api);
      if (stopped) return;
      replace(updated, "updated ", when(Date.now() / 1000));
      draw();
    } catch (err) {
      if (!stopped) replace(body, h("p.error", { role: "alert", text: `Could not list queues: ${err.description || err.message}` }));
    }
    if (!stopped && auto.checked) schedule();
  }

  function schedule() {
    clearTimeout(timer);
    timer = setTimeout(refresh, REFRESH_MS);
  }

  refresh();
  return { stop() { stopped = true; clearTimeout(timer); }, refresh };
}
