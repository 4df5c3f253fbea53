// Admin (admin role only): pools, flavors and health per pool.

import { h, replace } from "./dom.js";

function section(title, id, content) {
  return h("section.panel", { "aria-labelledby": id }, h("h2", { id, text: title }), content);
}

async function attempt(fn) {
  try { return { ok: true, value: await fn() }; } catch (err) { return { ok: false, error: err }; }
}

function table(head, rows) {
  return h("div.scroll", {}, h("table", {},
    h("thead", {}, h("tr", {}, head.map((t) => h("th", { scope: "col", text: t })))),
    h("tbody", {}, rows.map((r) => h("tr", {}, r.map((v) => h("td", { text: String(v ?? "–") })))))));
}

export function renderAdmin(root, { api, admin }) {
  if (!admin) {
    replace(root, h("h1", { text: "Admin" }),
      h("p.empty", { id: "not-admin", text: "The admin pages need the admin role; this sign-in does not have it." }));
    return {};
  }
  const body = h("div", {}, h("p.empty", { text: "Loading…" }));
  replace(root, h("h1", { text: "Admin" }), body);

  async function load() {
    // The home document lists pools and flavors only when pooling is on:
    // asking for them otherwise would only earn a 404.
    const home = await attempt(async () => (await api.get("/v2")).data);
    const served = (rel) => !home.ok || Boolean(((home.value || {}).resources || {})[rel]);
    const off = { ok: false, error: { message: "Pooling is off on this server (zq serve --pooling turns it on)." } };
    const [health, pools, flavors] = await Promise.all([
      attempt(async () => (await api.get("/v2/health")).data),
      served("rel/pools") ? attempt(() => api.pages("/v2/pools", { detailed: true }, "pools", 500)) : off,
      served("rel/flavors") ? attempt(() => api.pages("/v2/flavors", { detailed: true }, "flavors", 500)) : off,
    ]);
    if (health.error && health.error.aborted) return;
    const failed = (r) => h("p.empty", { text: r.error.description || r.error.message });
    replace(body,
      section("Health", "health-title", health.ok ? healthView(health.value) : failed(health)),
      section("Pools", "pools-title", !pools.ok ? failed(pools) : pools.value.items.length
        ? table(["Pool", "URI", "Weight", "Flavor"], pools.value.items.map((p) => [p.name, p.uri, p.weight, p.flavor || ""]))
        : h("p.empty", { text: "No pools registered." })),
      section("Flavors", "flavors-title", !flavors.ok ? failed(flavors) : flavors.value.items.length
        ? table(["Flavor", "Pools", "Capabilities"], flavors.value.items.map((f) => [f.name, (f.pool_list || []).join(", "), JSON.stringify(f.capabilities || {})]))
        : h("p.empty", { text: "No flavors defined." })));
  }

  load();
  return { refresh: load };
}

function healthView(health) {
  // One report, or one per pool name when pooling is on.
  const reports = "storage_reachable" in health ? { storage: health } : health;
  return h("div", {}, Object.entries(reports).map(([pool, report]) => {
    const reachable = report.storage_reachable;
    const ops = report.operation_status || {};
    return h("div.pool-health", { dataset: { pool } },
      h(`p.${reachable ? "ok" : "error"}`, { text: `${pool}: ${reachable ? "reachable" : "NOT reachable"}` }),
      Object.keys(ops).length
        ? table(["Operation", "Succeeded", "Seconds", "Reference"], Object.entries(ops).map(([name, o]) =>
            [name, o.succeeded, o.seconds, o.ref ?? ""]))
        : null);
  }));
}
