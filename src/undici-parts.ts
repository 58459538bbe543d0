// The parts of undici the bridge uses, assembled the way undici's own index does.

import type { Dispatcher as DispatcherType } from 'undici';
import Dispatcher from 'undici/lib/dispatcher/dispatcher.js';
import api from 'undici/lib/api/index.js';
import EnvHttpProxyAgent from 'undici/lib/dispatcher/env-http-proxy-agent.js';

// undici's index also loads fetch, WebSocket, caches and mocks, which cost start-up time and about
// 7 MB in every process. Its one side effect the bridge needs is this: request(), connect() (the
// proxy tunnel) and the rest live on Dispatcher.prototype. The version is pinned exactly and
// bundled, so these paths cannot move under us; the proxy and request tests would catch it.
Object.assign(Dispatcher.prototype, api);

export { EnvHttpProxyAgent };
export type { DispatcherType as Dispatcher };
