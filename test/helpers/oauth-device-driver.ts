// Plays the person on another device for the OAuth device grant: opens oidc-provider's verification page with plain HTTP and approves or denies.

/** The hidden inputs of the first form on a page (oidc-provider's verification, confirm and interaction forms). */
function hiddenInputs(html: string): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const match of html.matchAll(/<input type="hidden" name="([a-z_]+)" value="([^"]*)"\/?>/g)) fields[match[1]!] = match[2]!;
  return fields;
}

/**
 * Opens `verificationUriComplete` (the code in the URL), confirms the code, then signs in as alice and
 * consents on oidc-provider's development interaction pages; `deny` aborts at the confirm step instead
 * (the device code then answers access_denied, RFC 8628 §3.5). Resolves when the success (or aborted) page shows.
 */
export async function approveDevice(verificationUriComplete: string, mode: 'approve' | 'deny' = 'approve'): Promise<void> {
  const cookies = new Map<string, string>();
  const request = async (target: string, init: RequestInit = {}): Promise<Response> => {
    const headers = { ...(init.headers as Record<string, string> | undefined), cookie: [...cookies].map(([name, value]) => `${name}=${value}`).join('; ') };
    const response = await fetch(target, { ...init, headers, redirect: 'manual' });
    for (const line of response.headers.getSetCookie()) {
      const [pair = ''] = line.split(';');
      const equals = pair.indexOf('=');
      cookies.set(pair.slice(0, equals).trim(), pair.slice(equals + 1).trim());
    }
    return response;
  };
  const post = (target: string, form: Record<string, string>) =>
    request(target, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(form).toString() });

  const start = new URL(verificationUriComplete);
  const action = new URL(start.pathname, start).href;
  // The page for a URL with the code is an auto-submitting form with that code; the next asks to confirm it.
  const first = hiddenInputs(await (await request(start.href)).text());
  const confirm = hiddenInputs(await (await post(action, first)).text());
  let response = await post(action, mode === 'deny' ? { xsrf: confirm.xsrf!, user_code: confirm.user_code!, abort: 'yes' } : confirm);
  let current = action;
  for (let step = 0; step < 20; step++) {
    const location = response.headers.get('location');
    if (location !== null) {
      await response.text();
      current = new URL(location, current).href;
      response = await request(current);
      continue;
    }
    const html = await response.text();
    const prompt = /name="prompt" value="([a-z]+)"/.exec(html)?.[1];
    if (prompt === undefined) {
      if (response.status !== 200) throw new Error(`device driver: unexpected page ${response.status} at ${new URL(current).pathname}`);
      return;
    }
    response = await post(current, prompt === 'login' ? { prompt, login: 'alice', password: 'secret' } : { prompt });
  }
  throw new Error('device driver: too many steps');
}
