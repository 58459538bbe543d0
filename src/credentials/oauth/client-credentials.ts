// The client credentials grant (RFC 6749 §4.4): a confidential client gets its own token, no person and no browser.

import * as oauth from 'oauth4webapi';
import { BridgeError } from '../../core/errors.js';
import { toTerminalLine } from '../../core/terminal-text.js';
import type { Discovered } from './discovery.js';
import {
  checkIssued,
  classifyTokenError,
  clientAuth,
  extraParameters,
  registerTokens,
  requestedScope,
  resourceParameters,
  toClient,
  toStoredTokens,
  TokenRequestError,
  type FlowDeps,
} from './flow.js';
import { chooseClientAuthMethod } from './client-auth-method.js';
import { withBearerDefault } from './token-type.js';
import type { StoredClient, StoredTokens } from './token-store.js';

/**
 * One token request with the client's own credentials, `resource` included (RFC 8707 §2). No refresh
 * token is expected (RFC 6749 §4.4.3): a new token is fetched the same way. A refused client
 * (invalid_client, RFC 6749 §5.2) is one AUTH_REQUIRED error naming the client authentication.
 */
export async function clientCredentialsToken(
  deps: FlowDeps,
  discovered: Discovered,
  client: StoredClient,
  scope: string | undefined,
  signal: AbortSignal,
): Promise<StoredTokens> {
  const { as, resource } = discovered;
  const parameters: Record<string, string> = { ...extraParameters(deps), ...resourceParameters(deps, resource) };
  const requested = requestedScope(deps, as, scope);
  if (requested !== undefined) parameters.scope = requested;
  const what = 'the client credentials token request';
  try {
    const response = await oauth.clientCredentialsGrantRequest(
      as,
      toClient(client),
      clientAuth(as, client, deps),
      parameters,
      deps.http.options(new URL(as.token_endpoint!), signal),
    );
    const tokens = await oauth.processClientCredentialsResponse(as, toClient(client), await withBearerDefault(response));
    checkIssued(tokens, what, deps.mask);
    registerTokens(deps, tokens);
    // A refresh token, if one came anyway, is not kept: a new token costs one request (RFC 6749 §4.4.3).
    return { ...toStoredTokens(tokens, deps.now()), refreshToken: undefined };
  } catch (error) {
    if (signal.aborted) throw error;
    const failure = classifyTokenError(error, what, deps.mask);
    if (failure.kind === 'invalid-client') {
      throw new BridgeError(
        'AUTH_REQUIRED',
        `the authorization server ${toTerminalLine(as.issuer)} refused the client authentication of ${toTerminalLine(client.clientId)} (${deps.settings.clientKey === undefined ? chooseClientAuthMethod(as.token_endpoint_auth_methods_supported) : 'private_key_jwt'}): ${failure.message}`,
        {
          hint: `check --oauth-client-id and ${deps.settings.clientKey === undefined ? 'the secret in FENBS_MCP_OAUTH_CLIENT_SECRET or --oauth-client-secret-file' : `that the authorization server holds the public key of --oauth-client-key ${deps.settings.clientKey.file} for this client and accepts the token endpoint as the assertion's audience`}; requests are refused without asking again for a few minutes, and fenbs-mcp login --oauth-client-credentials tries again at once`,
        },
        { cause: failure },
      );
    }
    if (failure instanceof TokenRequestError && failure.hint !== undefined)
      throw new BridgeError('AUTH_REQUIRED', failure.message, { hint: failure.hint }, { cause: error });
    throw new BridgeError(
      'AUTH_REQUIRED',
      failure.message,
      { hint: 'check the network path to the authorization server; fenbs-mcp doctor shows what is reachable' },
      { cause: error },
    );
  }
}
