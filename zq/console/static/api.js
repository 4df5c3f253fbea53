// zq's public REST API, and nothing else. Credentials go in headers
// (X-Auth-Token, or X-Project-ID under auth = none), never in a cookie.

export class ApiError extends Error {
  constructor(status, title, description) {
    super(description || title || `HTTP ${status}`);
    this.status = status;
    this.title = title || `HTTP ${status}`;
    this.description = description || "";
  }

  /** The page that asked is gone (its requests were aborted): nothing to show. */
  get aborted() { return this.status === -1; }

  /** The route does not exist on this server (an older zq, a feature not built in). */
  get missingRoute() {
    return this.status === 405 || (this.status === 404 && !/queue/i.test(this.description));
  }
}

function uuid4() {
  // crypto.randomUUID needs a secure context; an operator may use plain http.
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const hex = [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export const JSON_PATCH = "application/openstack-messaging-v2.0-json-patch";

export class Api {
  /** session: {token} under auth = token, {project, admin} under auth = none. */
  constructor(session) {
    this.session = session;
    this.clientId = uuid4();
    this.signal = null;
  }

  /** The same client, whose requests `signal` aborts: one per page, aborted when it goes. */
  scoped(signal) {
    const api = Object.create(this);
    api.signal = signal;
    return api;
  }

  headers(contentType) {
    const headers = { Accept: "application/json", "Client-ID": this.clientId };
    if (this.session.token) headers["X-Auth-Token"] = this.session.token;
    if (this.session.project) headers["X-Project-ID"] = this.session.project;
    if (this.session.admin) headers["X-Roles"] = "admin";
    if (contentType) headers["Content-Type"] = contentType;
    return headers;
  }

  async request(method, path, { query, body, contentType } = {}) {
    let url = path;
    if (query) {
      const params = new URLSearchParams();
      for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null) params.set(k, String(v));
      const text = params.toString();
      if (text) url += (url.includes("?") ? "&" : "?") + text;
    }
    const init = { method, headers: this.headers(body !== undefined ? contentType || "application/json" : null),
      credentials: "omit", cache: "no-store", signal: this.signal || undefined };
    if (body !== undefined) init.body = JSON.stringify(body);
    let response, text;
    try {
      response = await fetch(url, init);
      text = response.status === 204 ? "" : await response.text();
    } catch (err) {
      if (this.signal && this.signal.aborted) throw new ApiError(-1, "Aborted", "The page was left.");
      throw new ApiError(0, "Network error", `The server did not answer (${err.message}).`);
    }
    let data = null;
    if (text) {
      try { data = JSON.parse(text); } catch { data = null; }
    }
    if (!response.ok) {
      throw new ApiError(response.status, data && data.title, data && data.description);
    }
    return { status: response.status, data, headers: response.headers };
  }

  get(path, query) { return this.request("GET", path, { query }); }

  /**
   * Follow `links` rel=next until `key` has `max` items (or the pages end);
   * `onPage(itemsSoFar)` after each page, to show them while the rest comes.
   */
  async pages(path, query, key, max = 1000, onPage = null) {
    const items = [];
    let next = null;
    let { data } = await this.get(path, query);
    for (;;) {
      if (!data) break;
      items.push(...(data[key] || []));
      if (onPage) onPage(items);
      next = (data.links || []).find((l) => l.rel === "next");
      const page = data[key] || [];
      if (!next || !page.length || items.length >= max) break;
      ({ data } = await this.get(next.href));
    }
    let truncated = items.length > max;
    if (items.length === max && next) {
      // Exactly max so far: one more page tells whether anything is left out.
      const { data: rest } = await this.get(next.href);
      truncated = Boolean(rest && (rest[key] || []).length);
    }
    return { items: items.slice(0, max), truncated };
  }
}

export const q = (name) => `/v2/queues/${encodeURIComponent(name)}`;
