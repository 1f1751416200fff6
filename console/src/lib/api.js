// Calls the gateway's documented HTTP APIs with a bearer token; every error comes back as
// an ApiError carrying the API's own code and message.

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

// `token()` gives the current bearer token; `onUnauthorized(error)` runs on a 401.
export function makeApi(token, onUnauthorized = () => {}) {
  async function call(method, path, { query, body } = {}) {
    const url = new URL(path, window.location.origin);
    for (const [k, v] of Object.entries(query ?? {})) {
      if (v !== undefined && v !== null && v !== '') url.searchParams.set(k, String(v));
    }
    const headers = { authorization: `Bearer ${token()}` };
    if (body !== undefined) headers['content-type'] = 'application/json';
    let res;
    try {
      res = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body),
        cache: 'no-store', credentials: 'omit' });
    } catch (e) {
      throw new ApiError(0, 'network', `the gateway did not answer (${e.message})`);
    }
    const text = await res.text();
    let json;
    try { json = text ? JSON.parse(text) : undefined; } catch { json = undefined; }
    if (!res.ok) {
      const err = json?.error;
      const e = new ApiError(res.status, err?.code ?? `http_${res.status}`, err?.message ?? `HTTP ${res.status}`);
      if (res.status === 401) onUnauthorized(e);
      throw e;
    }
    return json;
  }
  return {
    get: (path, query) => call('GET', path, { query }),
    post: (path, body) => call('POST', path, { body }),
    del: (path) => call('DELETE', path),
    // Follows `after` from the first page to has_more:false (or `max` items).
    async all(path, query = {}, max = Infinity) {
      const out = [];
      let after;
      for (;;) {
        const page = await call('GET', path, { query: { ...query, limit: 1000, after } });
        out.push(...page.data);
        if (!page.has_more || page.data.length === 0 || out.length >= max) return out;
        after = page.data[page.data.length - 1].id;
      }
    },
  };
}

// A route that this gateway does not serve yet: 404 "unknown path", or 405 where the path
// exists for another method only (GET /admin/v1/agreements beside its POST).
export function isMissingRoute(e) {
  return e instanceof ApiError && ((e.status === 404 && /unknown path/.test(e.message)) || e.status === 405);
}
