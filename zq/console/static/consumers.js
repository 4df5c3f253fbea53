// GET /v2/queues/{q}/consumers, where the server has it. An older zq has no
// such route: the console says so instead of failing.

import { q } from "./api.js";

let missing = false;

/** {available: true, list} or {available: false, reason}. */
export async function consumersOf(api, name) {
  if (missing) return { available: false, reason: "not available on this server" };
  try {
    const { data } = await api.get(`${q(name)}/consumers`);
    return { available: true, list: (data && data.consumers) || [] };
  } catch (err) {
    if (err.missingRoute) {
      missing = true;
      return { available: false, reason: "not available on this server" };
    }
    return { available: false, reason: err.description || err.message };
  }
}
