// Opens the sign-in page: `$BROWSER <url>` when set, else the system opener; only an https (or loopback http) URL, never waits for it.

import { spawn } from 'node:child_process';
import { isServerLoopbackHost } from '../../core/hosts.js';
import { BridgeError } from '../../core/errors.js';
import { maskUrl } from '../../logging/redactor.js';
import { toTerminalLine } from '../../core/terminal-text.js';

export interface BrowserOptions {
  env: Readonly<Record<string, string | undefined>>;
  platform: NodeJS.Platform;
  /** Told when the opener could not be started; the URL printed on stderr still works. */
  onError: (message: string) => void;
}

/** What starts the opener. */
export interface OpenerCommand {
  file: string;
  args: string[];
  /** Variables added to the opener's environment. */
  env: Record<string, string>;
  /** Windows: the arguments reach cmd.exe as written (it reads its own quoting, not the C runtime's). */
  windowsVerbatimArguments: boolean;
}

/** The variable that hands the URL to cmd.exe, which expands it once and never reads its value as a command. */
export const BROWSER_URL_VARIABLE = 'FENBS_MCP_BROWSER_URL';

/** What the opener may be given after the scheme: a DNS name (punycode once parsed), an IPv4 address or a bracketed IPv6 one. */
const OPENABLE_HOST = /^(?:[a-z0-9_-]+(?:\.[a-z0-9_-]+)*\.?|\[[0-9a-f:.]+\])$/;
/** Printable ASCII without the double quote: nothing a shell or cmd.exe reads inside quotes as their end. */
const OPENABLE_TEXT = /^[\x21\x23-\x7e]+$/;

export const UNOPENABLE_HINT = 'the authorization server names a sign-in page the bridge will not open in a browser; contact its operator';

/**
 * Why `text` may not be handed to the system opener, or undefined when it may: the one rule for
 * every browser the bridge opens. The OS opener runs whatever a URL's scheme is registered to
 * (`file:`, `ms-msdt:`, `FileProtocolHandler`'s programs: CVE-2025-6514), so only `https:` passes,
 * and `http:` to a host that is surely this machine (isServerLoopbackHost) for a local development
 * server (MCP authorization §Communication Security; --allow-http never widens this). A user name in it is refused (`https://bank@evil/`
 * shows one host and opens another), and so is text that WHATWG URL would write differently:
 * the opener must read exactly what was checked.
 */
export function openableUrlProblem(text: string): string | undefined {
  if (!URL.canParse(text)) return 'it is not a URL';
  const url = new URL(text);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return `its scheme is ${url.protocol}, and only https: is opened`;
  if (url.protocol === 'http:' && !isServerLoopbackHost(url.hostname))
    return 'its scheme is http: to a host other than this machine, and only https: is opened';
  if (url.username !== '' || url.password !== '') return 'it carries a user name or password before its host';
  if (url.href !== text || !OPENABLE_HOST.test(url.hostname) || !OPENABLE_TEXT.test(text)) return 'it is not written the way a browser would read it';
  return undefined;
}

/** The command that opens `url`: argv only, so nothing in the URL reaches a shell as code. */
export function openerCommand(url: string, env: BrowserOptions['env'], platform: NodeJS.Platform): OpenerCommand {
  const browser = env.BROWSER?.trim();
  if (browser !== undefined && browser !== '') {
    if (platform === 'win32') {
      // cmd.exe expands %NAME% anywhere on its line, inside quotes too, so a URL written into the
      // line (`?t=%FENBS_TOKEN%`) would carry the user's secrets to the server. The URL travels in
      // a variable instead: cmd.exe expands it once and does not expand its value again; /v:off
      // keeps !NAME! as text even where delayed expansion is on by default. The URL has no `"`
      // (openableUrlProblem), so the quotes around it hold and & | < > ^ in it stay text. /s
      // takes the outer quotes off what follows /c, leaving BROWSER's own quoting as written.
      return {
        file: 'cmd.exe',
        args: ['/d', '/v:off', '/s', '/c', `"${browser} "%${BROWSER_URL_VARIABLE}%""`],
        env: { [BROWSER_URL_VARIABLE]: url },
        windowsVerbatimArguments: true,
      };
    }
    // BROWSER may carry arguments ("firefox --new-window"): the shell splits it, the URL is "$1".
    return { file: '/bin/sh', args: ['-c', `${browser} "$1"`, 'fenbs-mcp-browser', url], env: {}, windowsVerbatimArguments: false };
  }
  if (platform === 'darwin') return { file: 'open', args: [url], env: {}, windowsVerbatimArguments: false };
  // rundll32 takes the URL as one argument; `start` would need cmd.exe, which reads & and ^.
  if (platform === 'win32') return { file: 'rundll32', args: ['url.dll,FileProtocolHandler', url], env: {}, windowsVerbatimArguments: false };
  return { file: 'xdg-open', args: [url], env: {}, windowsVerbatimArguments: false };
}

/**
 * Starts the opener detached; its exit and output are not waited for. A URL openableUrlProblem
 * refuses throws an AUTH_REQUIRED BridgeError and starts nothing: the last gate, whoever built the URL.
 */
export function openBrowser(url: string, options: BrowserOptions): void {
  const problem = openableUrlProblem(url);
  if (problem !== undefined) {
    throw new BridgeError('AUTH_REQUIRED', `refused to open ${toTerminalLine(maskUrl(url))} in the browser: ${problem}`, { hint: UNOPENABLE_HINT });
  }
  const { file, args, env, windowsVerbatimArguments } = openerCommand(url, options.env, options.platform);
  try {
    const child = spawn(file, args, { stdio: 'ignore', detached: true, env: { ...options.env, ...env }, windowsVerbatimArguments });
    child.on('error', (error) => options.onError(`could not start ${file}: ${error.message}`));
    child.unref();
  } catch (error) {
    options.onError(`could not start ${file}: ${(error as Error).message}`);
  }
}
