// Runs the test browser script for a sign-in URL, for tests that inject the opener instead of setting BROWSER.

import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

export const BROWSER_SCRIPT = fileURLToPath(new URL('./oauth-browser.mjs', import.meta.url));

/** Follows the login and consent for `url`; resolves with the script's exit code. */
export async function approve(url: string, env: Record<string, string> = {}): Promise<number | null> {
  const child = spawn(process.execPath, [BROWSER_SCRIPT, url], { stdio: 'ignore', env: { ...process.env, ...env } });
  const [code] = (await once(child, 'exit')) as [number | null];
  return code;
}
