// A small live chart of a queue's stats: free, claimed and delayed over
// the last minutes, drawn as SVG (no library, no inline style).

import { svg, h } from "./dom.js";

const SERIES = [["free", "Free"], ["claimed", "Claimed"], ["delayed", "Delayed"]];
const W = 1000, H = 150, PAD = 4;

export function drawChart(samples, windowSeconds) {
  const now = Date.now();
  const max = Math.max(1, ...samples.flatMap((s) => SERIES.map(([k]) => s[k] || 0)));
  const x = (t) => PAD + (W - 2 * PAD) * (1 - (now - t) / (windowSeconds * 1000));
  const y = (v) => H - PAD - (H - 2 * PAD) * (v / max);
  const lines = SERIES.map(([key]) => svg("polyline", {
    class: `line ${key}`, fill: "none",
    points: samples.map((s) => `${x(s.t).toFixed(1)},${y(s[key] || 0).toFixed(1)}`).join(" "),
  }));
  const last = samples[samples.length - 1] || {};
  // The newest value of each series as a dot: visible from the first sample on.
  const dots = samples.length ? SERIES.map(([key]) => svg("circle", {
    class: `dot ${key}`, cx: x(last.t).toFixed(1), cy: y(last[key] || 0).toFixed(1), r: 3,
  })) : [];
  const summary = SERIES.map(([k, label]) => `${label} ${last[k] ?? 0}`).join(", ");
  const figure = h("figure.chart", {},
    svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", preserveAspectRatio: "none",
      "aria-label": `Stats over the last ${windowSeconds / 60} minutes, now ${summary}` },
    svg("line", { class: "axis", x1: PAD, x2: W - PAD, y1: H - PAD, y2: H - PAD }), ...lines, ...dots),
    h("figcaption", {},
      h("span.muted", { text: samples.length < 2 ? "collecting samples (every 2 s) · "
        : `0 – ${max}, last ${windowSeconds / 60} min · ` }),
      SERIES.map(([k, label]) => h(`span.key.${k}`, { text: `${label} ${last[k] ?? 0}` }))));
  return figure;
}

// Message rates (GET /v2/queues/{q}/rates): per second, from counts per step.
export const RATES = [["posted", "Posted"], ["delivered", "Delivered"], ["deleted", "Deleted"],
  ["dead_lettered", "Dead lettered"], ["redriven", "Redriven"]];

/** Per-second rate of each kind over the last `seconds` (the newest steps). */
export function recentRates(data, seconds = 60) {
  const steps = Math.max(1, Math.round(seconds / data.step));
  const out = {};
  for (const [key] of RATES) {
    const counts = data.counts[key] || [];
    out[key] = counts.slice(-steps).reduce((a, b) => a + b, 0) / (steps * data.step);
  }
  return out;
}

const perSecond = (v) => (v >= 10 ? v.toFixed(0) : v >= 1 ? v.toFixed(1) : v.toFixed(2));

function ratePolylines(data, w, h, pad) {
  const n = data.counts.posted.length;
  const max = Math.max(1, ...RATES.flatMap(([k]) => data.counts[k] || []));
  const x = (i) => pad + (w - 2 * pad) * (n > 1 ? i / (n - 1) : 1);
  const y = (v) => h - pad - (h - 2 * pad) * (v / max);
  const lines = RATES.map(([key]) => svg("polyline", {
    class: `line ${key}`, fill: "none",
    points: (data.counts[key] || []).map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(" "),
  }));
  return { lines, max };
}

/** The queue page's chart: each kind per second over the window, like RabbitMQ's message rates. */
export function drawRates(data) {
  const { lines, max } = ratePolylines(data, W, H, PAD);
  const now = recentRates(data);
  const summary = RATES.map(([k, label]) => `${label} ${perSecond(now[k])}/s`).join(", ");
  return h("figure.chart.rates", { id: "rates" },
    svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", preserveAspectRatio: "none",
      "aria-label": `Message rates over the last ${data.window / 60} minutes; last minute: ${summary}` },
    svg("line", { class: "axis", x1: PAD, x2: W - PAD, y1: H - PAD, y2: H - PAD }), ...lines),
    h("figcaption", {},
      h("span.muted", { text: `per ${data.step} s, 0 – ${max}, last ${data.window / 60} min · last minute:` }),
      RATES.map(([k, label]) => h(`span.key.${k}`, { dataset: { rate: k }, text: `${label} ${perSecond(now[k])}/s` }))));
}

/** The overview's sparkline: the same series, small, the last minute's rates on hover. */
export function sparkline(data) {
  const { lines } = ratePolylines(data, 120, 24, 1);
  const now = recentRates(data);
  const text = RATES.map(([k, label]) => `${label} ${perSecond(now[k])}/s`).join(" · ");
  return h("span.spark", { title: `last minute: ${text}`, dataset: { posted: perSecond(now.posted) } },
    svg("svg", { viewBox: "0 0 120 24", width: 120, height: 24, role: "img", preserveAspectRatio: "none",
      "aria-label": `rates, last minute: ${text}` }, ...lines));
}
