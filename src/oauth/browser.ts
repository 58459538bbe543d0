// Opens the sign-in page: `$BROWSER <url>` when set, else the system opener; never waits for it.

import { spawn } from 'node:child_process';

export interface BrowserOptions {
  env: Readonly<Record<string, string | undefined>>;
  platform: NodeJS.Platform;
  /** Told when the opener could not be started; the URL printed on stderr still works. */
  onError: (message: string) => void;
}

/** The command that opens `url`: argv only, so nothing in the URL reaches a shell unquoted. */
export function openerCommand(url: string, env: BrowserOptions['env'], platform: NodeJS.Platform): { file: string; args: string[] } {
  const browser = env.BROWSER?.trim();
  if (browser !== undefined && browser !== '') {
    // BROWSER may carry arguments ("firefox --new-window"): the shell splits it, the URL is "$1".
    if (platform === 'win32') return { file: 'cmd.exe', args: ['/d', '/s', '/c', `${browser} "${url}"`] };
    return { file: '/bin/sh', args: ['-c', `${browser} "$1"`, 'fenbs-mcp-browser', url] };
  }
  if (platform === 'darwin') return { file: 'open', args: [url] };
  // rundll32 takes the URL as one argument; `start` would need cmd.exe, which reads & and ^.
  if (platform === 'win32') return { file: 'rundll32', args: ['url.dll,FileProtocolHandler', url] };
  return { file: 'xdg-open', args: [url] };
}

/** Starts the opener detached; its exit and output are not waited for. */
export function openBrowser(url: string, options: BrowserOptions): void {
  const { file, args } = openerCommand(url, options.env, options.platform);
  try {
    const child = spawn(file, args, { stdio: 'ignore', detached: true, env: { ...options.env } });
    child.on('error', (error) => options.onError(`could not start ${file}: ${error.message}`));
    child.unref();
  } catch (error) {
    options.onError(`could not start ${file}: ${(error as Error).message}`);
  }
}
