// The console's REST client. The app id and master key live in this tab's sessionStorage
// only (gone when the tab closes) and travel as the X-LC-Id / X-LC-Key headers, never in a
// URL: URLs end up in access logs, browser history and Referer headers.

const SESSION = 'pushd.console.session';

export function session() {
  try {
    const s = JSON.parse(sessionStorage.getItem(SESSION));
    return s && s.appId && s.masterKey ? s : null;
  } catch {
    return null;
  }
}

export function saveSession(appId, masterKey) {
  sessionStorage.setItem(SESSION, JSON.stringify({ appId, masterKey }));
}

export function clearSession() {
  sessionStorage.removeItem(SESSION);
}

// APIError is a {code, error} answer of pushd (or a transport failure, code 0).
export class APIError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

// call sends one request as the signed-in app with the master key; body, when given, is sent
// as JSON. It resolves to the decoded answer and rejects with an APIError.
export async function call(method, path, body, s = session()) {
  if (!s) throw new APIError(401, 401, 'not signed in');
  const headers = { 'X-LC-Id': s.appId, 'X-LC-Key': `${s.masterKey},master` };
  const init = { method, headers, cache: 'no-store', credentials: 'omit', referrerPolicy: 'no-referrer' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(path, init);
  } catch (e) {
    throw new APIError(0, 0, `cannot reach pushd: ${e.message}`);
  }
  const text = await res.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!res.ok) {
    const msg = data && typeof data.error === 'string' ? data.error : `HTTP ${res.status}`;
    throw new APIError(res.status, data && data.code ? data.code : 0, msg);
  }
  return data;
}

// query builds a query string from defined, non-empty values.
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== '') q.set(k, typeof v === 'string' ? v : JSON.stringify(v));
  }
  const s = q.toString();
  return s ? `?${s}` : '';
}
