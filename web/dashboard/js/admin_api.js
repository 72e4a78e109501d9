// Fetches from the admin listener, with its token when the operator gave one
// (kept in sessionStorage: gone with the tab). A 401 throws NeedsToken, so
// the page can ask for it; any other failure throws an Error naming the path.
const TOKEN_KEY = 'arbiter.adminToken';

export class NeedsToken extends Error {}

export function setToken(token) {
  sessionStorage.setItem(TOKEN_KEY, token);
}

export function dropToken() {
  sessionStorage.removeItem(TOKEN_KEY);
}

// The response of GET `path`, whatever its status but 401.
export async function adminFetch(path) {
  const token = sessionStorage.getItem(TOKEN_KEY);
  const headers = token ? { authorization: `Bearer ${token}` } : {};
  const res = await fetch(path, { headers, cache: 'no-store' });
  if (res.status === 401) throw new NeedsToken(`${path} needs the admin token`);
  return res;
}

async function fetchOk(path) {
  const res = await adminFetch(path);
  if (!res.ok) throw new Error(`${path} answered ${res.status}`);
  return res;
}

export async function fetchText(path) {
  return (await fetchOk(path)).text();
}

export async function fetchJson(path) {
  return (await fetchOk(path)).json();
}
