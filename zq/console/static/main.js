// The console's shell: sign-in, the router (#/queues, #/queue/NAME,
// #/dlq/NAME, #/admin), keyboard shortcuts.

import { Api, ApiError } from "./api.js";
import { h, replace, notify, clearNotice } from "./dom.js";
import { renderOverview } from "./overview.js";
import { renderQueue } from "./queue.js";
import { renderDeadLetters } from "./deadletters.js";
import { renderAdmin } from "./admin.js";

const AUTH = document.querySelector('meta[name="zq-auth"]').content;
const USES_TOKEN = AUTH === "token" || AUTH === "keystone";
// sessionStorage: gone with the tab, never sent by the browser on its own
// (a cookie would be, to any request, which is what CSRF rides on).
const SESSION_KEY = "zq-console-session";

const state = { api: null, admin: false, view: null, controller: null };
const main = () => document.getElementById("main");

function savedSession() {
  try { return JSON.parse(sessionStorage.getItem(SESSION_KEY) || "null"); } catch { return null; }
}

async function probeAdmin(api) {
  // Under auth = none the server trusts X-Roles as sent: the box ticked is the answer.
  if (!USES_TOKEN) return Boolean(api.session.admin);
  try {
    // The home document says whether this zq tells a caller its roles; an
    // older one does not, and then only trying /v2/health tells.
    const home = (await api.get("/v2")).data || {};
    if ((home.resources || {})["rel/identity"]) return Boolean((await api.get("/v2/identity")).data.admin);
    await api.get("/v2/health");
    return true;
  } catch {
    return false;
  }
}

/** Check a session against the server: a list call any project may make. */
async function verify(session) {
  const api = new Api(session);
  await api.get("/v2/queues", { limit: 1 });
  return api;
}

function signInForm(message) {
  stopView();
  document.getElementById("nav").hidden = true;
  document.getElementById("signout").hidden = true;
  document.getElementById("who").textContent = "";
  const error = h("p.error", { id: "signin-error", role: "alert", text: message || "" });
  const fields = USES_TOKEN
    ? [h("label", { for: "token" }, "API token"),
       h("input", { id: "token", name: "token", type: "password", autocomplete: "off", required: true,
         "aria-describedby": "token-hint signin-error" }),
       h("p.hint", { id: "token-hint", text: "Sent as the X-Auth-Token header of each API call; kept in this tab only." })]
    : [h("label", { for: "project" }, "Project"),
       h("input", { id: "project", name: "project", autocomplete: "on", required: true,
         "aria-describedby": "project-hint signin-error" }),
       h("p.hint", { id: "project-hint", text: "This server trusts the X-Project-ID header (auth = none)." }),
       h("label.check", {}, h("input", { id: "as-admin", type: "checkbox" }), " send X-Roles: admin (pools, flavors, health)")];
  const form = h("form.signin", { on: { submit: onSignIn }, "aria-labelledby": "signin-title" },
    h("h1", { id: "signin-title", text: USES_TOKEN ? "Sign in with a token" : "Choose a project" }),
    fields, error, h("button.primary", { type: "submit", text: "Open console" }));
  replace(main(), form);
  form.querySelector("input").focus();
}

async function onSignIn(event) {
  event.preventDefault();
  const form = event.currentTarget;
  const session = USES_TOKEN
    ? { token: form.querySelector("#token").value.trim() }
    : { project: form.querySelector("#project").value.trim(), admin: form.querySelector("#as-admin").checked };
  const error = form.querySelector("#signin-error");
  error.textContent = "Checking…";
  try {
    state.api = await verify(session);
  } catch (err) {
    error.textContent = `Refused: ${err.description || err.message}`;
    form.querySelector("input").select();
    return;
  }
  sessionStorage.setItem(SESSION_KEY, JSON.stringify(session));
  await opened();
}

async function opened() {
  state.admin = await probeAdmin(state.api);
  document.getElementById("nav").hidden = false;
  document.getElementById("nav-admin").hidden = !state.admin;
  document.getElementById("signout").hidden = false;
  const s = state.api.session;
  document.getElementById("who").textContent = s.project
    ? `project ${s.project}${state.admin ? " · admin" : ""}`
    : `token${state.admin ? " · admin" : ""}`;
  if (!location.hash || location.hash === "#") location.hash = "#/queues";
  else route();
}

function stopView() {
  // What the page still waits for is of no use now: abort it, so no answer
  // arrives for a page that is gone.
  if (state.controller) state.controller.abort();
  state.controller = null;
  if (state.view && state.view.stop) state.view.stop();
  state.view = null;
  // A notice speaks of the page it came from.
  clearNotice();
}

function route() {
  if (!state.api) return;
  stopView();
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  state.controller = new AbortController();
  const ctx = { api: state.api.scoped(state.controller.signal), admin: state.admin };
  for (const link of document.querySelectorAll("#nav a")) {
    link.toggleAttribute("aria-current", link.dataset.section === (parts[0] === "admin" ? "admin" : "queues"));
  }
  const root = main();
  if (parts[0] === "queue" && parts[1]) state.view = renderQueue(root, ctx, parts[1]);
  else if (parts[0] === "dlq" && parts[1]) state.view = renderDeadLetters(root, ctx, parts[1]);
  else if (parts[0] === "admin") state.view = renderAdmin(root, ctx);
  else state.view = renderOverview(root, ctx);
  root.focus({ preventScroll: true });
}

function signOut() {
  sessionStorage.removeItem(SESSION_KEY);
  state.api = null;
  state.admin = false;
  // The next sign-in starts from the overview, not from a page it may not see.
  history.replaceState(null, "", "#/queues");
  signInForm("Signed out.");
}

let pendingG = false;
function onKey(event) {
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  const target = event.target;
  const typing = target instanceof HTMLInputElement || target instanceof HTMLTextAreaElement ||
    target instanceof HTMLSelectElement;
  if (typing || document.querySelector("#modal-root .dialog")) return;
  if (event.key === "/") {
    const filter = document.getElementById("filter");
    if (filter) { event.preventDefault(); filter.focus(); }
  } else if (event.key === "r" && state.view && state.view.refresh) {
    state.view.refresh();
    notify("Refreshed.");
  } else if (pendingG && event.key === "q") {
    location.hash = "#/queues";
  } else if (pendingG && event.key === "a" && state.admin) {
    location.hash = "#/admin";
  }
  pendingG = event.key === "g";
}

// An aborted request of a page that is gone is no error: nothing waits for it.
window.addEventListener("unhandledrejection", (event) => {
  if (event.reason instanceof ApiError && event.reason.aborted) event.preventDefault();
});

async function start() {
  document.getElementById("signout").addEventListener("click", signOut);
  window.addEventListener("hashchange", route);
  document.addEventListener("keydown", onKey);
  const session = savedSession();
  if (!session) { signInForm(); return; }
  try {
    state.api = await verify(session);
  } catch (err) {
    signInForm(`Your saved sign-in was refused: ${err.description || err.message}`);
    return;
  }
  await opened();
}

start();
