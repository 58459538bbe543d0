// The device authorization grant (RFC 8628): a code shown on stderr, approved on any device, the token endpoint polled meanwhile.

import { setTimeout as sleep } from 'node:timers/promises';
import * as oauth from 'oauth4webapi';
import { toTerminalLine } from '../../core/terminal-text.js';
import { openableUrlProblem } from './browser.js';
import { reasonOf } from './discovery.js';
import {
  checkIssued,
  classifyTokenError,
  clientAuth,
  extraParameters,
  requestedScope,
  resourceParameters,
  MAX_EXPIRES_IN_SECONDS,
  obtainClient,
  registerTokens,
  serverWords,
  SignInError,
  toClient,
  toStoredTokens,
  type FlowDeps,
  type SignInRequest,
  type SignInResult,
} from './flow.js';
import { withBearerDefault } from './token-type.js';

/** RFC 8628 §3.5: the grant type of the token request. */
export const DEVICE_CODE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
/** RFC 8628 §3.2: the polling interval when the server names none, in seconds. */
export const DEFAULT_POLL_INTERVAL_S = 5;
/** RFC 8628 §3.5: what `slow_down` adds to the interval, for this and every later poll, in seconds. */
export const SLOW_DOWN_STEP_S = 5;
/** An interval below this is taken as this: a server cannot make the bridge poll in a tight loop. */
export const MIN_POLL_INTERVAL_S = 1;
/** An interval above this (named, or grown by slow_down) is taken as this: a person is waiting. */
export const MAX_POLL_INTERVAL_S = 60;

/**
 * The longest user code shown: RFC 8628 §6.1 asks for codes a person can type (8 characters of a
 * small alphabet is its example), so anything near this is broken or hostile, and a cut code could
 * not be typed anyway: longer is refused, not cut.
 */
export const MAX_USER_CODE_CHARS = 64;
/** The longest verification URI shown (each of the two): a person copies it, and a terminal shows it. */
export const MAX_VERIFICATION_URI_CHARS = 2048;

const DEVICE_HINT = 'run fenbs-mcp login --oauth-device-code to get a new code (requests ask for one only after a quiet period)';

function clampInterval(seconds: number): number {
  return Math.min(MAX_POLL_INTERVAL_S, Math.max(MIN_POLL_INTERVAL_S, seconds));
}

/** The text for the person at the terminal: where to go and the code to type, as the server gave them (made terminal-safe). */
export function deviceCodeText(server: string, auth: oauth.DeviceAuthorizationResponse): string {
  const complete =
    auth.verification_uri_complete === undefined
      ? ''
      : `\n  or open this URL, which carries the code:\n\n  ${toTerminalLine(auth.verification_uri_complete)}\n`;
  return `fenbs-mcp: to sign in to ${server}, open this URL on any device:\n\n  ${toTerminalLine(auth.verification_uri)}\n\n  and enter the code  ${toTerminalLine(auth.user_code)}\n${complete}\n`;
}

/**
 * Device authorization (RFC 8628 §3.1, with `resource`, RFC 8707), the code shown, then the token
 * endpoint polled at the server's interval (§3.4, §3.5) until the person approves or denies, the
 * code expires, or `expires_in` (capped by the login timeout) passes here. Never opens a browser.
 */
export async function deviceSignIn(deps: FlowDeps, request: SignInRequest & { server: string }): Promise<SignInResult> {
  const { as, resource } = request.discovered;
  const { signal } = request;
  if (as.device_authorization_endpoint === undefined) {
    throw new SignInError(
      'failed',
      `the authorization server ${toTerminalLine(as.issuer)} offers no device authorization (its metadata has no device_authorization_endpoint, RFC 8628 §4)`,
      {
        hint: 'leave out --oauth-device-code to sign in with a browser, or ask the administrator to enable the device grant',
      },
    );
  }
  const client = await obtainClient(deps, as, request.storedClient, undefined, signal, [DEVICE_CODE_GRANT, 'refresh_token']);
  if (client !== request.storedClient) request.onClient?.(client);
  let auth: oauth.DeviceAuthorizationResponse;
  // The code's lifetime runs from when the server issued it, which is no earlier than this request
  // (RFC 8628 §3.2 expires_in): measured from here, the last poll never carries an expired code.
  const asked = deps.now();
  try {
    const parameters: Record<string, string> = { ...extraParameters(deps), ...resourceParameters(deps, resource) };
    const scope = requestedScope(deps, as, request.scope);
    if (scope !== undefined) parameters.scope = scope;
    const response = await oauth.deviceAuthorizationRequest(
      as,
      toClient(client),
      clientAuth(as, client, deps),
      parameters,
      deps.http.options(new URL(as.device_authorization_endpoint), signal),
    );
    auth = await oauth.processDeviceAuthorizationResponse(as, toClient(client), response);
  } catch (error) {
    if (signal.aborted) throw error;
    const failure = classifyTokenError(error, 'the device authorization request', deps.mask);
    throw new SignInError(
      failure.kind === 'invalid-client' ? 'client-rejected' : 'failed',
      failure.message,
      {
        hint: failure.hint ?? 'the authorization server refused to start a device sign-in for this client',
      },
      { cause: error },
    );
  }
  deps.registerSecret(auth.device_code);
  for (const [name, value, limit] of [
    ['user_code', auth.user_code, MAX_USER_CODE_CHARS],
    ['verification_uri', auth.verification_uri, MAX_VERIFICATION_URI_CHARS],
    ['verification_uri_complete', auth.verification_uri_complete, MAX_VERIFICATION_URI_CHARS],
  ] as const) {
    if (value !== undefined && value.length > limit) {
      throw new SignInError(
        'failed',
        `refused the device sign-in of ${toTerminalLine(as.issuer)}: its ${name} is ${value.length} characters long, more than the ${limit} a person can be shown to type or open`,
        { hint: 'the authorization server answered the device authorization request with a broken response; ask its administrator' },
      );
    }
  }
  // Server text that a person is asked to open: the same rule as the browser's opener (CVE-2025-6514).
  for (const uri of [auth.verification_uri, auth.verification_uri_complete]) {
    const problem = uri === undefined ? undefined : openableUrlProblem(uri);
    if (problem !== undefined) {
      throw new SignInError('failed', `refused the device sign-in page of ${toTerminalLine(as.issuer)}: ${problem}`, {
        hint: 'the authorization server named a verification URI that is not https (or http on this machine); ask its administrator',
      });
    }
  }
  deps.showDeviceCode(deviceCodeText(request.server, auth));

  let intervalS = clampInterval(auth.interval ?? DEFAULT_POLL_INTERVAL_S);
  const lifetimeMs = Math.min(auth.expires_in, MAX_EXPIRES_IN_SECONDS) * 1000;
  const waitMs = Math.min(lifetimeMs, deps.settings.loginTimeoutMs);
  const deadline = asked + waitMs;
  const what = 'the device sign-in';
  // Bounded: every turn waits at least MIN_POLL_INTERVAL_S, and the deadline ends the loop.
  for (;;) {
    if (deps.now() + intervalS * 1000 > deadline) {
      // The code's own expiry (or the login timeout) would pass before the next poll.
      throw new SignInError('timeout', `nobody approved the device sign-in within ${Math.round(waitMs / 1000)} s`, {
        hint: `${DEVICE_HINT}; --oauth-login-timeout sets the wait (up to the code's own lifetime)`,
      });
    }
    await sleep(intervalS * 1000, undefined, { signal });
    try {
      const response = await oauth.deviceCodeGrantRequest(as, toClient(client), clientAuth(as, client, deps), auth.device_code, {
        ...deps.http.options(new URL(as.token_endpoint!), signal),
        additionalParameters: resourceParameters(deps, resource),
      });
      const tokens = await oauth.processDeviceCodeResponse(as, toClient(client), await withBearerDefault(response));
      checkIssued(tokens, 'the device code exchange', deps.mask);
      registerTokens(deps, tokens);
      return { client, tokens: toStoredTokens(tokens, deps.now()) };
    } catch (error) {
      if (signal.aborted) throw error;
      if (error instanceof oauth.ResponseBodyError) {
        if (error.error === 'authorization_pending') continue;
        if (error.error === 'slow_down') {
          intervalS = clampInterval(intervalS + SLOW_DOWN_STEP_S);
          continue;
        }
        if (error.error === 'access_denied') {
          throw new SignInError('denied', `the device sign-in was denied (${serverWords(error.error_description ?? error.error, deps.mask)})`, {
            hint: DEVICE_HINT,
          });
        }
        if (error.error === 'expired_token') {
          throw new SignInError('timeout', 'the device code expired before anyone approved the sign-in', { hint: DEVICE_HINT });
        }
      }
      const failure = classifyTokenError(error, what, deps.mask);
      throw new SignInError(
        failure.kind === 'invalid-client' ? 'client-rejected' : 'failed',
        failure.message === '' ? `${what} failed: ${reasonOf(error)}` : failure.message,
        { hint: failure.hint ?? 'see the message from the authorization server' },
        { cause: error },
      );
    }
  }
}
