// A queue's page: live stats chart, its metadata with the dead letter and
// backoff form (the server validates; its errors show next to the form),
// its consumers with suspected ones marked, and purge.

import { q, JSON_PATCH } from "./api.js";
import { h, replace, aged, when, notify, clearNotice, confirmAction } from "./dom.js";
import { drawChart, drawRates } from "./chart.js";
import { consumersOf } from "./consumers.js";
import { feedersOf, queueLinks } from "./deadletters.js";

const SAMPLE_MS = 2000;
const WINDOW_S = 600;
const samplesByQueue = new Map(); // kept while the tab lives: coming back keeps the curve

// The reserved keys of the form: [key, label, kind, hint]
const FIELDS = [
  ["_max_claim_count", "Max claim count", "int", "deliveries before a message moves to the dead letter queue"],
  ["_dead_letter_queue", "Dead letter queue", "text", "a queue name; not this queue, no cycle, same pool"],
  ["_dead_letter_queue_messages_ttl", "Dead letter ttl (s)", "int", "ttl a message gets when it moves"],
  ["_dead_letter_expired", "Dead letter expired messages", "bool", "expired messages move instead of vanishing"],
  ["_retry_delay", "Retry delay (s)", "int", "backoff base between deliveries"],
  ["_retry_max_delay", "Retry max delay (s)", "int", "at least the retry delay"],
  ["_retry_backoff", "Backoff", "choice", "how the delay grows with the claim count"],
  ["_suspect_lapsed_consumers", "Suspect lapsed consumers", "bool", "hold back consumers that let a claim lapse"],
  ["_breaker_failure_ratio", "Breaker failure ratio", "number", "0 < r <= 1: the share of failed deliveries that trips the breaker; set: breaker on"],
  ["_breaker_min_failures", "Breaker min failures", "int", "distinct messages that must fail in the window (default 20)"],
  ["_breaker_window", "Breaker window (s)", "int", "how far back failures and successes count (default 60)"],
  ["_breaker_probe_interval", "Breaker probe interval (s)", "int", "one probe delivery per interval while open (default 5)"],
  ["_breaker_close_after", "Breaker close after", "int", "successful probes in a row that close it (default 3)"],
  ["_auto_redrive_max", "Auto-redrive max", "int", "automatic redrives of a message after an outage (default 1; 0: off)"],
];

function field([key, label, kind, hint], metadata) {
  const id = `f${key}`;
  const value = metadata[key];
  let input;
  if (kind === "bool") {
    input = h("input", { id, name: key, type: "checkbox", checked: value === true });
  } else if (kind === "choice") {
    input = h("select", { id, name: key },
      ["", "fixed", "linear", "exponential"].map((v) => h("option", { value: v, text: v || "(unset: exponential)", selected: value === v })));
  } else {
    input = h("input", { id, name: key, inputmode: kind === "int" ? "numeric" : kind === "number" ? "decimal" : null,
      value: value ?? "", autocomplete: "off" });
  }
  input.setAttribute("aria-describedby", `${id}-hint ${id}-error`);
  return h("div.field", { dataset: { key } },
    h("label", { for: id, text: label }), input,
    h("span.hint", { id: `${id}-hint`, text: `${key}: ${hint}` }),
    h("span.field-error", { id: `${id}-error` }));
}

const BREAKER_BADGE = { closed: "ok", "half-open": "warn", open: "bad" };

/**
 * The facts the stats carry beyond the counts: the outage breaker (a queue
 * whose `_breaker_failure_ratio` is set: its state, since when, and the
 * failure most deliveries in the window shared), and the claims waiting for
 * a message on this queue (long poll: `waiting`, a count across the
 * server's workers). Each shows only when the stats carry it
 * (docs/console.md).
 */
export function stateFacts(stats) {
  const facts = [];
  if (stats.breaker !== undefined && stats.breaker !== null) {
    const b = stats.breaker;
    facts.push(["State", h(`span.badge.${BREAKER_BADGE[b.state] || "bad"}`, { text: `breaker ${b.state ?? b}` })]);
    // The epoch: a breaker that never moved, on a backend that does not know
    // when the queue was created.
    facts.push(["Since", Date.parse(b.since) > 0 ? when(b.since) : h("span.muted", { text: "never tripped" })]);
    facts.push(["Failure", b.description ? h("span.mono", { text: b.description, title: b.description })
      : h("span.muted", { text: "–" })]);
  }
  if (typeof stats.waiting === "number") facts.push(["Waiting", stats.waiting]);
  return facts;
}

/** What forcing the breaker does next, for its button: [label, forced state, dialog text]. */
export function breakerAction(breaker) {
  if (breaker.state === "closed") {
    return ["Open breaker…", "open",
      "Deliveries slow to one probe message per _breaker_probe_interval and failures are no longer charged to messages, until probes close it or you do."];
  }
  return ["Close breaker…", "closed",
    "Deliveries go back to full speed, the window's failures are forgotten and the outage's dead letters are redriven (_auto_redrive_max), as when probes close it."];
}

/** "waiting" (one claim waiting) or "N waiting"; nothing when none. */
export function waitingBadge(count) {
  if (!count) return "";
  return h("span.badge.ok", { text: count > 1 ? `${count} waiting` : "waiting",
    title: `${count} claim${count > 1 ? "s" : ""} waiting for a message (long poll)` });
}

/** The form's values as a JSON patch: an empty field sets null, which unsets a reserved key. */
export function patchFrom(form) {
  return FIELDS.map(([key, , kind]) => {
    const el = form.elements[key];
    let value;
    if (kind === "bool") value = el.checked ? true : null;
    else if (el.value.trim() === "") value = null;
    else if (kind === "int") value = /^-?\d+$/.test(el.value.trim()) ? Number(el.value.trim()) : el.value.trim();
    else if (kind === "number") value = /^-?(\d+\.?\d*|\.\d+)$/.test(el.value.trim()) ? Number(el.value.trim()) : el.value.trim();
    else value = el.value.trim();
    return { op: "add", path: `/metadata/${key}`, value };
  });
}

/**
 * The field a refusal concerns: the key its description names, else the field
 * whose label its title names ("Invalid dead letter queue", whose description
 * names queues, not the key).
 */
function culpritOf(err) {
  const text = err.description || err.message;
  const byLength = (a, b) => b.length - a.length;
  const key = FIELDS.map(([k]) => k).sort(byLength).find((k) => text.includes(k));
  if (key) return key;
  const title = (err.title || "").toLowerCase();
  const field = [...FIELDS].sort((a, b) => byLength(a[1], b[1])).find(([, label]) => title.includes(label.toLowerCase()));
  return field ? field[0] : null;
}

export function renderQueue(root, { api }, name) {
  let stopped = false;
  let timer = null;
  const samples = samplesByQueue.get(name) || [];
  samplesByQueue.set(name, samples);
  const statsBox = h("div", { id: "stats" }, h("p.empty", { text: "Loading stats…" }));
  const ratesBox = h("div", { id: "rates-box" }, h("p.empty", { text: "Loading rates…" }));
  const metaBox = h("section.panel", { "aria-labelledby": "meta-title" }, h("h2", { id: "meta-title", text: "Dead letter policy, backoff and breaker" }));
  const consumersBox = h("section.panel", { "aria-labelledby": "consumers-title" }, h("h2", { id: "consumers-title", text: "Consumers" }));
  const purge = h("button.danger", { type: "button", text: "Purge messages…", on: { click: onPurge } });
  // Shown once the stats carry a breaker; its label follows the state.
  const breakerButton = h("button", { type: "button", id: "breaker-force", hidden: true, on: { click: onForceBreaker } });
  let breaker = null;
  const feeders = h("p.feeders", { id: "feeders" });
  const publishBox = publishPanel();
  replace(root,
    h("nav.crumbs", { "aria-label": "Breadcrumb" }, h("a", { href: "#/queues", text: "Queues" }), " / ", h("span", { text: name })),
    h("div.bar", {}, h("h1", { text: name }),
      h("a.button", { href: `#/dlq/${encodeURIComponent(name)}`, text: "Browse as dead letters" }), breakerButton, purge),
    h("section.panel", { "aria-labelledby": "stats-title" }, h("h2", { id: "stats-title", text: "Stats" }), statsBox),
    h("section.panel", { "aria-labelledby": "rates-title" }, h("h2", { id: "rates-title", text: "Message rates" }), ratesBox),
    feeders,
    h("div.columns", {}, metaBox, consumersBox), publishBox);

  async function sample() {
    clearTimeout(timer);
    try {
      const { data } = await api.get(`${q(name)}/stats`);
      const m = data.messages;
      samples.push({ t: Date.now(), free: m.free, claimed: m.claimed, delayed: m.delayed || 0 });
      while (samples.length && samples[0].t < Date.now() - WINDOW_S * 1000) samples.shift();
      if (stopped) return;
      showBreaker(data.breaker || null);
      replace(statsBox,
        h("dl.counts", {},
          [["Free", m.free], ["Claimed", m.claimed], ["Delayed", m.delayed ?? "–"], ["Total", m.total],
           ["Oldest", aged(m.oldest ? m.oldest.age : null)], ["Newest", aged(m.newest ? m.newest.age : null)],
           ...stateFacts(data)]
            .map(([k, v]) => h("div", {}, h("dt", { text: k }),
              h("dd", { dataset: { stat: k.toLowerCase() } }, v instanceof Node ? v : String(v))))),
        drawChart(samples, WINDOW_S));
    } catch (err) {
      if (!stopped) replace(statsBox, h("p.error", { role: "alert", text: `Could not read stats: ${err.description || err.message}` }));
    }
    await loadRates();
    if (!stopped) timer = setTimeout(sample, SAMPLE_MS);
  }

  async function loadRates() {
    try {
      const { data } = await api.get(`${q(name)}/rates`);
      if (!stopped) replace(ratesBox, drawRates(data));
    } catch (err) {
      if (stopped) return;
      replace(ratesBox, h("p.empty", { text: err.missingRoute
        ? "Rates are not served here: they come from the metrics tail ([metrics] enabled = true)."
        : `Could not read rates: ${err.description || err.message}` }));
    }
  }

  async function loadMetadata() {
    let metadata;
    try {
      metadata = (await api.get(q(name))).data || {};
    } catch (err) {
      replace(metaBox, h("h2", { id: "meta-title", text: "Dead letter policy, backoff and breaker" }),
        h("p.error", { role: "alert", text: err.description || err.message }));
      return;
    }
    const formError = h("p.error", { id: "meta-error", role: "alert" });
    const form = h("form.meta", { on: { submit: onSave }, "aria-describedby": "meta-error" },
      FIELDS.map((f) => field(f, metadata)), formError,
      h("button.primary", { type: "submit", text: "Save" }));
    replace(metaBox, h("h2", { id: "meta-title", text: "Dead letter policy, backoff and breaker" }), form,
      h("details", {}, h("summary", { text: "All metadata (JSON)" }), h("pre.json", { text: JSON.stringify(metadata, null, 2) })));
  }

  async function onSave(event) {
    event.preventDefault();
    const form = event.currentTarget;
    for (const el of form.querySelectorAll(".field-error")) el.textContent = "";
    for (const el of form.querySelectorAll("[aria-invalid]")) el.removeAttribute("aria-invalid");
    const formError = form.querySelector("#meta-error");
    formError.textContent = "";
    clearNotice(); // this save's outcome replaces the last one's
    try {
      await api.request("PATCH", q(name), { body: patchFrom(form), contentType: JSON_PATCH });
    } catch (err) {
      if (stopped) return;
      const text = err.description || err.message;
      const culprit = culpritOf(err);
      if (culprit) {
        const box = form.querySelector(`[data-key="${culprit}"]`);
        box.querySelector(".field-error").textContent = text;
        box.querySelector("input, select").setAttribute("aria-invalid", "true");
        box.querySelector("input, select").focus();
      }
      formError.textContent = err.status === 404
        ? `${text} (a queue exists once a message was posted to it, or it was created with PUT).`
        : `Not saved: ${text}`;
      return;
    }
    // The notice once the form shows what was saved: a field typed into
    // before that would be lost with the form it was typed into.
    await loadMetadata();
    if (stopped) return;
    notify(`Saved the metadata of ${name}.`, "ok");
  }

  async function loadConsumers() {
    const result = await consumersOf(api, name);
    const title = h("h2", { id: "consumers-title", text: "Consumers" });
    if (!result.available) {
      replace(consumersBox, title, h("p.empty", { text: `Consumers are ${result.reason}.` }));
      return;
    }
    if (!result.list.length) {
      replace(consumersBox, title, h("p.empty", { text: "No consumer claimed from this queue in the last hour." }));
      return;
    }
    // Claims each consumer has waiting for a message (long poll): a column
    // when the server reports them (a zq before long polling does not).
    const waits = result.list.some((c) => c.waiting !== undefined);
    const head = ["Client-ID", "Last claim", "Live", "Lapsed", ...(waits ? ["Waiting"] : []), ""];
    replace(consumersBox, title, h("div.scroll", {}, h("table", {},
      h("thead", {}, h("tr", {}, head.map((t) => h("th", { scope: "col", text: t })))),
      h("tbody", {}, result.list.map((c) => h(`tr${c.suspected ? ".warn" : ""}`, { dataset: { client: c.client_id } },
        h("td.mono", { text: c.client_id }),
        h("td", {}, when(c.last_claim)),
        h("td.num", { text: String(c.live_claims ?? "–") }),
        h("td.num", { text: String(c.lapsed_claims ?? "–") }),
        waits ? h("td", { dataset: { col: "waiting" } }, waitingBadge(c.waiting)) : null,
        h("td", {}, c.suspected ? h("span.badge.warn", { text: "suspected" }) : "")))))));
  }

  function showBreaker(value) {
    breaker = value;
    breakerButton.hidden = !breaker;
    if (breaker) breakerButton.textContent = breakerAction(breaker)[0];
  }

  async function onForceBreaker() {
    if (!breaker) return;
    const [label, state, text] = breakerAction(breaker);
    const verb = label.replace("…", "");
    if (!(await confirmAction(`${verb.replace(" breaker", " the breaker")} of ${name}?`, text, verb))) return;
    clearNotice();
    try {
      await api.request("POST", `${q(name)}/breaker`, { body: { state } });
      if (stopped) return;
      notify(`Forced the breaker of ${name} ${state}.`, "ok");
      sample();
    } catch (err) {
      if (!stopped) notify(`Not forced: ${err.description || err.message}`, "error");
    }
  }

  async function onPurge() {
    if (!(await confirmAction(`Purge ${name}?`, `Every message of ${name} is deleted, claimed ones too. This cannot be undone.`, "Purge"))) return;
    try {
      await api.request("POST", `${q(name)}/purge`, { body: { resource_types: ["messages"] } });
      notify(`Purged ${name}.`, "ok");
      sample();
    } catch (err) {
      notify(`Purge failed: ${err.description || err.message}`, "error");
    }
  }

  /** A message to try a fix with before redriving: body as JSON, ttl, delay. */
  function publishPanel() {
    const error = h("p.error", { id: "publish-error", role: "alert" });
    const form = h("form.publish", { on: { submit: onPublish }, "aria-describedby": "publish-error" },
      h("label", { for: "publish-body", text: "Body (JSON)" }),
      h("textarea", { id: "publish-body", rows: "4", spellcheck: "false", text: '{"test": true}' }),
      h("div.inline", {},
        h("label", { for: "publish-ttl", text: "ttl (s)" }),
        h("input", { id: "publish-ttl", inputmode: "numeric", value: "3600", autocomplete: "off" }),
        h("label", { for: "publish-delay", text: "delay (s)" }),
        h("input", { id: "publish-delay", inputmode: "numeric", value: "0", autocomplete: "off" }),
        h("button.primary", { type: "submit", text: "Publish" })),
      error);
    return h("section.panel", { "aria-labelledby": "publish-title" },
      h("h2", { id: "publish-title", text: "Publish a test message" }), form);
  }

  async function onPublish(event) {
    event.preventDefault();
    const form = event.currentTarget;
    const error = form.querySelector("#publish-error");
    error.textContent = "";
    clearNotice();
    let body;
    try {
      body = JSON.parse(form.querySelector("#publish-body").value);
    } catch (err) {
      error.textContent = `The body is not JSON: ${err.message}`;
      return;
    }
    // ttl and delay go as typed: the server's limits decide, and say why.
    const number = (id) => {
      const text = form.querySelector(id).value.trim();
      return /^-?\d+$/.test(text) ? Number(text) : text;
    };
    try {
      const { data } = await api.request("POST", `${q(name)}/messages`,
        { body: { messages: [{ body, ttl: number("#publish-ttl"), delay: number("#publish-delay") }] } });
      if (stopped) return;
      const id = ((data && data.resources) || [""])[0].split("/").pop();
      notify(`Published message ${id} to ${name}.`, "ok");
      sample();
    } catch (err) {
      if (!stopped) error.textContent = `Not published: ${err.description || err.message}`;
    }
  }

  async function loadFeeders() {
    try {
      const names = await feedersOf(api, name);
      if (!stopped && names.length) {
        replace(feeders, "Dead letter queue of ", ...queueLinks(names), " · ",
          h("a", { href: `#/dlq/${encodeURIComponent(name)}`, text: "browse its dead letters" }));
      }
    } catch {
      // The page stands without it; the dead letter browser says why.
    }
  }

  sample();
  loadMetadata();
  loadConsumers();
  loadFeeders();
  return {
    stop() { stopped = true; clearTimeout(timer); },
    refresh() { sample(); loadConsumers(); },
  };
}
