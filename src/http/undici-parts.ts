// The parts of undici the bridge uses, assembled the way undici's own index does.

import type { Dispatcher as DispatcherType } from 'undici';
import Dispatcher from 'undici/lib/dispatcher/dispatcher.js';
import api from 'undici/lib/api/index.js';
import Agent from 'undici/lib/dispatcher/agent.js';
import EnvHttpProxyAgent from 'undici/lib/dispatcher/env-http-proxy-agent.js';
import buildConnector from 'undici/lib/core/connect.js';

// undici's index also loads fetch, WebSocket, caches and mocks, which cost start-up time and about
// 7 MB in every process. Its one side effect the bridge needs is this: connect() (the proxy
// tunnel of EnvHttpProxyAgent) and the rest of the API live on Dispatcher.prototype. The bridge's
// own requests go through dispatch() with a handler (http/send.ts), which needs no API module. The version is pinned exactly and
// bundled, so these paths cannot move under us between releases of the bridge.
//
// Upgrading undici (change the exact pin in package.json, then `npm install`):
// - test/undici-parts.test.ts must pass: the four paths above exist, Dispatcher.prototype gets
//   request/stream/pipeline/upgrade/connect, Agent and EnvHttpProxyAgent are still classes.
// - Read undici's index.js (package root) for new side effects it performs at load time (besides
//   `Object.assign(Dispatcher.prototype, api)`) that request() or the proxy agent depend on, and
//   repeat them here.
// - Check undici-internals.d.ts still matches what those modules export, that the error codes
//   http/failures.ts classifies by (UND_ERR_*) still exist, and that the dispatch handler callbacks
//   http/send.ts implements (onRequestStart, onResponseStart/Data/End/Error, controller pause/resume/
//   abort) keep their meaning.
// - Run the whole `npm test` (the proxy, TLS and fault suites) and compare the bundle size.
Object.assign(Dispatcher.prototype, api);

export { Agent, EnvHttpProxyAgent, buildConnector };
export type { DispatcherType as Dispatcher };
