// A test browser for BROWSER=<node> <this file>: records each URL it is given, then signs in with plain HTTP requests.
/* global fetch, URLSearchParams */
//
// OAUTH_BROWSER_LOG: file that gets one line per invocation (the URL).
// OAUTH_BROWSER_CODES: file that gets the callback URL it delivered (so tests can look for the code).
// OAUTH_BROWSER_MODE: approve (default) | deny (aborts the interaction: access_denied) | ignore (a closed window).
import { appendFileSync } from 'node:fs';

const url = process.argv[2];
const mode = process.env.OAUTH_BROWSER_MODE ?? 'approve';
if (process.env.OAUTH_BROWSER_LOG) appendFileSync(process.env.OAUTH_BROWSER_LOG, `${url}\n`);
if (mode === 'ignore') process.exit(0);

const cookies = new Map();
async function request(target, init = {}) {
  const headers = { ...(init.headers ?? {}), cookie: [...cookies].map(([name, value]) => `${name}=${value}`).join('; ') };
  const response = await fetch(target, { ...init, headers, redirect: 'manual' });
  for (const line of response.headers.getSetCookie()) {
    const [pair] = line.split(';');
    const equals = pair.indexOf('=');
    cookies.set(pair.slice(0, equals).trim(), pair.slice(equals + 1).trim());
  }
  return response;
}

let next = url;
let init = {};
for (let step = 0; step < 20; step++) {
  const target = new URL(next);
  if (target.pathname === '/callback') {
    // Recorded before delivery: once the bridge has the code, the test may end and remove the folder.
    if (process.env.OAUTH_BROWSER_CODES) appendFileSync(process.env.OAUTH_BROWSER_CODES, `${target.href}\n`);
    await (await request(target)).text();
    process.exit(0);
  }
  const response = await request(target, init);
  init = {};
  const location = response.headers.get('location');
  if (location !== null) {
    await response.text();
    next = new URL(location, target).href;
    continue;
  }
  const html = await response.text();
  const prompt = /name="prompt" value="([a-z]+)"/.exec(html)?.[1];
  if (response.status !== 200 || prompt === undefined) {
    process.stderr.write(`test browser: unexpected page ${response.status} at ${target.pathname}\n`);
    process.exit(1);
  }
  if (mode === 'deny') {
    next = new URL(`${target.pathname}/abort`, target).href;
    continue;
  }
  const form = prompt === 'login' ? { prompt, login: 'alice', password: 'secret' } : { prompt };
  init = { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(form).toString() };
  next = target.href;
}
process.stderr.write('test browser: too many steps\n');
process.exit(1);
